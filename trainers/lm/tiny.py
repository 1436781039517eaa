"""Tiny models built from a config, with a character tokenizer trained locally: nothing is
downloaded. Used by the demo and the tests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"


def train_char_tokenizer(texts: Iterable[str]) -> Any:
    """A character-level tokenizer whose vocabulary is learned from `texts` (plus specials)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=[PAD, EOS, UNK]))
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK
    )


def build_tiny_gpt2(
    tokenizer: Any, n_layer: int = 2, n_embd: int = 64, n_head: int = 4, n_positions: int = 32
) -> Any:
    """A randomly initialised GPT-2 sized for CPU tests, its vocabulary the tokenizer's."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return GPT2LMHeadModel(config)


def save_model(model: Any, tokenizer: Any, folder: str | Path) -> Path:
    """Write model and tokenizer into `folder` in transformers format."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
