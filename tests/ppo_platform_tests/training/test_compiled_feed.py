"""The compiled batch's training thread: its chunks end where the seeds' evaluations and
checkpoints fall (as the batch's sessions once asked for them), they come in order with the
numbers the program trains in the caller's thread, and a stop ends the thread without another
chunk handed over. A real compiled program on CartPole's JAX port."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppo_platform.training.compiled_feed import MAX_AHEAD, ChunkFeed, ChunkPlan
from ppo_platform.training.compiled_path import MAX_CHUNK

pytest.importorskip("jax")


def _chunks_as_the_sessions_asked(plan: ChunkPlan, n_updates: int) -> list[int]:
    """What the batch asked before the feed: each seed's next evaluation and checkpoint moved
    on in its `take` at the chunk's end, and the next chunk ran to the nearest of them."""
    batch = plan.batch_size
    next_eval, next_checkpoint = plan.every_eval, plan.every_checkpoint
    done, lengths = 0, []
    while done < n_updates:
        pending = ((next_eval, plan.every_eval), (next_checkpoint, plan.every_checkpoint))
        due = [math.ceil(step / batch) - done for step, every in pending if every]
        count = min(max(1, min(due, default=MAX_CHUNK)), MAX_CHUNK, n_updates - done)
        done += count
        lengths.append(count)
        steps = done * batch
        if plan.every_eval and steps >= next_eval:
            next_eval += plan.every_eval * ((steps - next_eval) // plan.every_eval + 1)
        if plan.every_checkpoint and steps >= next_checkpoint:
            next_checkpoint += plan.every_checkpoint * (
                (steps - next_checkpoint) // plan.every_checkpoint + 1
            )
    return lengths


def _chunks_of(plan: ChunkPlan, n_updates: int) -> list[int]:
    """The lengths `CompiledPPO.train` runs when `plan.next_chunk()` caps them."""
    next_chunk, done, lengths = plan.next_chunk(), 0, []
    while done < n_updates:
        count = max(1, min(MAX_CHUNK, next_chunk(done), n_updates - done))
        done += count
        lengths.append(count)
    return lengths


@pytest.mark.parametrize(
    ("batch", "every_eval", "every_checkpoint", "n_updates"),
    [
        (256, 0, 0, 391),  # neither: whole chunks
        (256, 10_000, 0, 391),  # evaluations fall mid-rollout
        (256, 0, 50_000, 391),
        (256, 10_000, 25_000, 391),  # both, at different periods
        (64, 128, 256, 40),  # due every other update
        (100, 1, 0, 12),  # due every step: chunks of one update
        (256, 256 * 64, 256 * 64, 200),  # exactly on a whole chunk
    ],
)
def test_the_plan_ends_chunks_where_the_seeds_sessions_asked(
    batch: int, every_eval: int, every_checkpoint: int, n_updates: int
) -> None:
    plan = ChunkPlan(batch, every_eval, every_checkpoint)
    lengths = _chunks_of(plan, n_updates)
    assert lengths == _chunks_as_the_sessions_asked(plan, n_updates)
    assert sum(lengths) == n_updates
    if every_eval == 1:
        assert set(lengths) == {1}


def _program(updates: int = 10):
    from ppo_platform.trainers.compiled.ppo import CompiledConfig, CompiledPPO

    config = CompiledConfig(
        "CartPole-v1", 4, 16, 2, 32, 64 * updates, (1e-3, 0.0, True), (0.2, 0.0, True), chunk=4
    )
    return CompiledPPO(config)


def test_the_feed_hands_over_the_chunks_the_program_trains_in_order() -> None:
    program = _program()
    plan = ChunkPlan(64, 0, 0)  # chunks of `chunk` = 4 updates: 4, 4, 2
    direct: list[tuple[int, dict]] = []
    program.train([3, 7], lambda first, metrics, state: direct.append((first, metrics)), None)
    fed = list(ChunkFeed(program, [3, 7], 1, plan).start().chunks())
    assert [first for first, _, _ in fed] == [first for first, _ in direct] == [0, 4, 8]
    for (_, metrics, state), (_, expected) in zip(fed, direct, strict=True):
        for name, values in expected.items():
            np.testing.assert_array_equal(metrics[name], values, err_msg=name)
        assert set(state) == {"params", "opt"}
    losses = fed[0][1]["train/value_loss"]
    assert losses.shape == (2, 4) and np.isfinite(losses).all()


def test_a_stop_ends_the_training_thread_with_no_chunk_after_it() -> None:
    # 400 chunks of one update (an evaluation due every step): the thread may run at most
    # MAX_AHEAD chunks ahead of the taker, so a stop after the first ends it long before.
    program = _program(updates=400)
    feed = ChunkFeed(program, [0], 1, ChunkPlan(64, 1, 0)).start()
    chunks = feed.chunks()
    first, _, _ = next(chunks)
    feed.stop()
    feed._thread.join(timeout=60)
    assert first == 0 and not feed._thread.is_alive()
    # What it had queued before the stop may still be taken, then the end.
    rest = [start for start, _, _ in chunks]
    assert rest == list(range(1, len(rest) + 1)) and len(rest) <= MAX_AHEAD, rest
