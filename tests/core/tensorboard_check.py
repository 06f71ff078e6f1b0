#!/usr/bin/env python3
"""Checks a topotrain run's TensorBoard event files with TensorBoard's own readers.

usage: tensorboard_check.py RUN_DIR [--expect-files N] [--expect-repeated-steps]

Reads RUN_DIR/tb with tensorboard's EventAccumulator (what `tensorboard --logdir` builds on) and its
plugin EventAccumulator (what the server's scalar and text dashboards read), after their purge of
events orphaned by a restart, and compares them with RUN_DIR/metrics.jsonl and RUN_DIR/config.pbtxt:
every finite numeric field of every record (but "step") must be the scalar of its tag at that step
(to float32 rounding), each step once, no tag extra or missing, and the "config" text summary must
hold config.pbtxt. --expect-repeated-steps also asserts that the raw files (read record by record,
no purge) hold some step twice, i.e. that the purge was needed. Prints one line per check; exit 0
when all pass, 1 otherwise.
"""
import argparse
import json
import math
import os
import re
import socket
import sys

from tensorboard.backend.event_processing import event_accumulator, event_file_loader
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.util import tensor_util

# metrics.jsonl field -> tag, as documented in docs/tensorboard.md (an independent copy, on purpose).
KNOWN_TAGS = {
    "loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm", "val_loss": "val/loss",
    "tokens_per_s": "throughput/tokens_per_s", "mfu": "throughput/mfu", "comm_s": "comm/comm_s",
    "exposed_comm_s": "comm/exposed_comm_s", "param_gather_s": "comm/param_gather_s",
    "peak_memory_bytes": "memory/peak_bytes",
}


def tag_for(field):
    if field in KNOWN_TAGS:
        return KNOWN_TAGS[field]
    if field.startswith("val_"):
        return "val/" + field[4:]
    if field.endswith("_bytes"):
        return "memory/" + field
    if field.endswith("_s"):
        return "time/" + field
    return "train/" + field


def expected_scalars(metrics_path):
    """tag -> {step: value} from metrics.jsonl."""
    expected = {}
    with open(metrics_path) as f:
        for line in f:
            record = json.loads(line)
            step = record.get("step")
            if not isinstance(step, int):
                continue
            for field, value in record.items():
                if field == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                if not math.isfinite(value):
                    continue
                by_step = expected.setdefault(tag_for(field), {})
                assert step not in by_step, f"metrics.jsonl has step {step} twice"
                by_step[step] = float(value)
    return expected


def close_f32(got, want):
    return abs(got - want) <= 1.2e-7 * abs(want) + 1e-38  # float32 rounds to within 2^-24 relative


class Checker:
    def __init__(self):
        self.failures = 0

    def check(self, ok, message):
        print(("ok   " if ok else "FAIL ") + message)
        self.failures += 0 if ok else 1
        return ok


def compare(checker, reader_name, got, expected):
    """got, expected: tag -> list of (step, value) / {step: value}."""
    checker.check(sorted(got) == sorted(expected),
                  f"{reader_name}: scalar tags {sorted(got)} == metrics.jsonl's {sorted(expected)}")
    compared = 0
    for tag in sorted(expected):
        events = got.get(tag, [])
        steps = [s for s, _ in events]
        checker.check(len(steps) == len(set(steps)), f"{reader_name}: {tag}: no step twice ({len(steps)} events)")
        checker.check(sorted(set(steps)) == sorted(expected[tag]),
                      f"{reader_name}: {tag}: steps {sorted(set(steps))} == {sorted(expected[tag])}")
        for step, value in events:
            if step in expected[tag]:
                compared += 1
                want = expected[tag][step]
                if not close_f32(value, want):
                    checker.check(False, f"{reader_name}: {tag} at step {step}: {value!r} != {want!r}")
    print(f"     {reader_name}: compared {compared} scalar values")
    return compared


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--expect-files", type=int, default=1)
    parser.add_argument("--expect-repeated-steps", action="store_true")
    args = parser.parse_args()
    tb_dir = os.path.join(args.run_dir, "tb")
    checker = Checker()

    files = sorted(os.listdir(tb_dir))
    name = re.compile(r"events\.out\.tfevents\.\d{10}\." + re.escape(socket.gethostname()) + r"(\.\d+)?$")
    checker.check(len(files) == args.expect_files and all(name.match(f) for f in files),
                  f"{len(files)} event file(s) named events.out.tfevents.<time>.<host>: {files}")

    expected = expected_scalars(os.path.join(args.run_dir, "metrics.jsonl"))
    with open(os.path.join(args.run_dir, "config.pbtxt")) as f:
        config = f.read()

    # 1. The classic EventAccumulator: simple_value scalars and tensors, all kept (size 0 = no sampling).
    acc = event_accumulator.EventAccumulator(tb_dir, size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    checker.check(acc.file_version == 2.0, f"file version {acc.file_version} (brain.Event:2)")
    got = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    n = compare(checker, "EventAccumulator", got, expected)
    checker.check(n == sum(len(v) for v in expected.values()), "every metrics.jsonl value was compared")
    checker.check("config" in acc.Tags()["tensors"], "a 'config' tensor summary exists")
    if "config" in acc.Tags()["tensors"]:
        checker.check(acc.SummaryMetadata("config").plugin_data.plugin_name == "text", "config is for the text plugin")
        latest = acc.Tensors("config")[-1]
        text = tensor_util.make_ndarray(latest.tensor_proto).item().decode("utf-8")
        body = text[4:-3] if text.startswith("```\n") and text.endswith("```") else None
        checker.check(body == config, f"config text at step {latest.step} is config.pbtxt in a code block")

    # 2. The plugin EventAccumulator the TensorBoard server uses: scalars migrated to tensors.
    pacc = plugin_event_accumulator.EventAccumulator(tb_dir, size_guidance={"tensors": 0})
    pacc.Reload()
    got = {}
    for tag in pacc.Tags()["tensors"]:
        if pacc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
            got[tag] = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto).item())) for e in pacc.Tensors(tag)]
    compare(checker, "plugin EventAccumulator", got, expected)
    text_tags = [t for t in pacc.Tags()["tensors"] if pacc.SummaryMetadata(t).plugin_data.plugin_name == "text"]
    checker.check(text_tags == ["config"], f"text plugin tags {text_tags} == ['config']")

    if args.expect_repeated_steps:
        seen, repeated = set(), set()
        for f in files:
            for event in event_file_loader.EventFileLoader(os.path.join(tb_dir, f)).Load():
                for value in event.summary.value:
                    if value.tag == "train/loss":
                        (repeated if event.step in seen else seen).add(event.step)
        checker.check(bool(repeated), f"raw files (no purge) repeat train/loss steps {sorted(repeated)}")

    print("all checks passed" if checker.failures == 0 else f"{checker.failures} check(s) failed")
    return 0 if checker.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
