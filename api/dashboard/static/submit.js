// The submit page: validate the spec through /ui/specs/validate as the user types (debounced),
// show each issue in the notes column beside its line and in a list; submit when valid.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const spec = document.getElementById("spec");
  const gutter = document.getElementById("gutter");
  const notes = document.getElementById("notes");
  const verdict = document.getElementById("verdict");
  const issues = document.getElementById("issues");
  const button = document.getElementById("submit");
  let timer = null;
  let generation = 0;

  function post(url, text) {
    return fetch(url, {
      method: "POST", body: text, credentials: "same-origin",
      headers: { "Content-Type": "application/yaml", "X-CSRF-Token": csrf },
    });
  }

  function lines(byLine) {
    const count = spec.value.split("\n").length;
    gutter.replaceChildren();
    notes.replaceChildren();
    for (let n = 1; n <= count; n++) {
      const number = document.createElement("li");
      const note = document.createElement("li");
      number.textContent = String(n);
      const found = byLine[n];
      if (found) {
        number.className = note.className = "bad";
        note.textContent = found;
        note.title = found;
        note.dataset.line = String(n);
      }
      gutter.appendChild(number);
      notes.appendChild(note);
    }
    sync();
  }

  function sync() {
    gutter.scrollTop = notes.scrollTop = spec.scrollTop;
  }

  function show(problems) {
    const byLine = {};
    issues.replaceChildren();
    problems.forEach((p) => {
      const where = p.line ? "line " + p.line + ": " : "";
      const text = (p.path ? p.path + ": " : "") + p.message + (p.fix ? " Fix: " + p.fix : "");
      if (p.line) byLine[p.line] = (byLine[p.line] ? byLine[p.line] + " · " : "") + text;
      const li = document.createElement("li");
      li.className = "issue";
      li.textContent = where + text;
      issues.appendChild(li);
    });
    lines(byLine);
  }

  async function validate() {
    const mine = ++generation;
    const text = spec.value;
    if (!text.trim()) {
      verdict.textContent = "Paste a spec to check it.";
      verdict.className = "muted";
      button.disabled = true;
      show([]);
      return;
    }
    verdict.textContent = "Checking…";
    const response = await post("/ui/specs/validate", text);
    if (mine !== generation) return; // a newer edit is being checked
    if (response.status === 429) { // over this key's write rate: check again when allowed
      const wait = Number(response.headers.get("Retry-After")) || 1;
      clearTimeout(timer);
      timer = setTimeout(validate, 1000 * wait);
      return;
    }
    const body = await response.json();
    if (response.ok && body.valid) {
      verdict.textContent = "Valid " + body.kind + " spec “" + body.name + "”.";
      verdict.className = "ok";
      button.disabled = false;
      show([]);
    } else {
      const problems = body.issues && body.issues.length ? body.issues : [{ message: body.message }];
      verdict.textContent = problems.length + " problem(s): fix them to submit.";
      verdict.className = "error";
      button.disabled = true;
      show(problems);
    }
  }

  function schedule() {
    button.disabled = true;
    clearTimeout(timer);
    timer = setTimeout(validate, 300);
  }

  spec.addEventListener("input", schedule);
  spec.addEventListener("scroll", sync);
  document.getElementById("spec-file").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    spec.value = await file.text();
    schedule();
  });
  button.addEventListener("click", async () => {
    button.disabled = true;
    verdict.textContent = "Submitting…";
    const response = await post("/v1/experiments", spec.value);
    const body = await response.json();
    if (response.ok) {
      location.assign("/experiments/" + encodeURIComponent(body.id));
    } else {
      verdict.textContent = body.message;
      verdict.className = "error";
      show(body.issues || []);
    }
  });
  lines({});
  if (spec.value.trim()) validate();
})();
