#!/usr/bin/env bash
# Ground truth for the cost model and the planner on this machine: two "hosts" (network namespaces
# joined by a veth pair, tests/parallel/ddp/netns_setup.sh) with `tc` shaping the link, one rank per
# host under mpirun. For every link setting it
#   1. calibrates: `topotrain probe --dump` across the hosts -> a Topology with measured busbw/alpha,
#   2. times real collectives (`topotrain bench comm`) and compares them with the cost model's
#      prediction for the same sizes (`topotrain plan --topology T --predict-collective ...`),
#   3. trains a few steps of a ~3M-parameter GPT for each candidate strategy (bucket cap x payload x
#      ZeRO stage, forced with --set), takes the median step_s / exposed_comm_s of metrics.jsonl
#      (first steps skipped) and compares them with the planner's prediction for the same candidate
#      (`topotrain plan --json` fed the compute times measured on this machine),
# and prints  setting | quantity | predicted | measured | error %  plus, per setting, the planner's
# pick among the candidates run (the eligible ones, as `strategy: auto` picks: ZeRO-3 only when no
# lower stage fits) next to the measured fastest. Results: $OUT/results.md and .json, and
# $OUT/steps.png (predicted vs measured step time, with the +-20% band).
#
#   launch/ground_truth.sh [--quick] [--latency] [--settings 1gbit,10gbit,1gbit@1ms] [--out DIR] [--bin PATH]
#                          [--delay-line PATH] [--sizes 4K,64K,1M,4M,16M] [--candidates "25:none:0 1:int8:0"]
#                          [--rounds N]
#
# Link settings are RATE[@DELAYms]: tbf on both veth ends (rate RATE, burst 1 ms of RATE), and with a
# DELAY (e.g. 1gbit@0.1ms) the hosts joined through a router namespace whose delay line
# (tests/parallel/ddp/delay_line.cpp, netns_setup.sh --delay-ms) holds every packet DELAY ms in each
# direction (RTT = 2 DELAY + ~0.1 ms of overhead; sch_netem does not exist in this kernel). Default
# settings: 1gbit,10gbit; --latency adds 1gbit@0.1ms,1gbit@1ms,10gbit@0.1ms,10gbit@1ms (--quick:
# 1gbit, and 1gbit@1ms with --latency). Candidates are BUCKET_MB:COMPRESSION:ZERO_STAGE; with
# --rounds N (default 2, --quick 1) every candidate trains N times, the rounds interleaved, and the
# round with the lowest median step counts (other tenants of a shared machine slow single runs). The
# delay_line executable is --delay-line, else the one built next to the topotrain binary
# (build/tests/delay_line), else compiled into OUT with c++. Each setting's TCP round trip between
# the hosts is measured (python3 ping-pong) and reported. Delayed settings are skipped, with the
# reason, where /dev/net/tun is missing. Needs root (ip netns, tc), mpirun (OpenMPI), python3.
#
# Design: nothing is added to the root namespace (no bridge, address or route) so no traffic leaves
# the namespaces; each setting gets a fresh network (the plain veth pair without a delay, exactly
# as before), and the namespaces and the delay line are removed by a trap whatever happens. Compute
# is calibrated with two concurrent 1-rank `bench step` runs (the two ranks share this machine's cores, so one
# rank alone would be faster than each of two) and passed to the planner as --forward-s,
# --backward-s and --optimizer-s. Compressed all-reduce uses the planner's default pricing (with two
# ranks a compressed ring and an all-gather of whole compressed buckets move the same S_c per rank).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0
SETTINGS=""
OUT="$ROOT/runs/ground_truth"
BIN=""
DELAY_LINE=""
LATENCY=0
SIZES="4K,64K,1M,4M,16M"
CANDIDATES=""
STEPS=""
SKIP=5
ROUNDS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --latency) LATENCY=1 ;;
    --delay-line) DELAY_LINE=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    --candidates) CANDIDATES=$2; shift ;;
    --settings) SETTINGS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --steps) STEPS=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "ground_truth.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$BIN" ]; then
  for b in "$ROOT/build-gt/topotrain" "$ROOT/build/topotrain"; do [ -x "$b" ] && { BIN=$b; break; }; done
fi
[ -x "$BIN" ] || { echo "ground_truth.sh: no topotrain binary (build it, or pass --bin)" >&2; exit 2; }
if [ -z "$SETTINGS" ]; then
  if [ $QUICK = 1 ]; then
    SETTINGS="1gbit"; [ $LATENCY = 1 ] && SETTINGS="$SETTINGS,1gbit@1ms"
  else
    SETTINGS="1gbit,10gbit"; [ $LATENCY = 1 ] && SETTINGS="$SETTINGS,1gbit@0.1ms,1gbit@1ms,10gbit@0.1ms,10gbit@1ms"
  fi
fi
if [ $QUICK = 1 ]; then
  [ -n "$CANDIDATES" ] || CANDIDATES="25:none:0 1:none:0 25:int8:0 25:none:1"
  STEPS=${STEPS:-12}; SKIP=4; ROUNDS=${ROUNDS:-1}
else
  [ -n "$CANDIDATES" ] || CANDIDATES="1:none:0 25:none:0 1:bf16:0 25:bf16:0 1:int8:0 25:int8:0 1:none:1 25:none:1"
  STEPS=${STEPS:-16}; ROUNDS=${ROUNDS:-2}
fi
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ground_truth.sh: --rounds wants a positive count, got '$ROUNDS'" >&2; exit 2; }
[[ "$STEPS" =~ ^[0-9]+$ ]] && [ "$STEPS" -gt "$SKIP" ] ||
  { echo "ground_truth.sh: --steps must be more than the $SKIP warm-up steps skipped, got '$STEPS'" >&2; exit 2; }
for setting in ${SETTINGS//,/ }; do
  [[ "$setting" =~ ^[0-9.]+[kmgKMG]?bit(@[0-9.]+ms)?$ ]] ||
    { echo "ground_truth.sh: bad setting '$setting' (RATE[@DELAYms], e.g. 1gbit@0.1ms)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "ground_truth.sh: needs root (ip netns, tc)" >&2; exit 2; }
for t in ip tc mpirun python3; do command -v $t >/dev/null || { echo "ground_truth.sh: '$t' not found" >&2; exit 2; }; done

NETNS="$ROOT/tests/parallel/ddp"
TAG="gt$$"
SUBNET="10.231.$(( $$ % 100 + 100 ))"
A="$SUBNET.1"; B="$SUBNET.2"
cleanup() { sh "$NETNS/netns_setup.sh" down "$TAG" || true; }  # namespaces, links and the delay line
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/log.txt"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG" >&2; }

# Model: the tiny synthetic-corpus config scaled to 4 x 256 (3.2M params, 12.7 MB of fp32 gradients).
CONFIG="$ROOT/examples/gpt2-tiny-synth.pbtxt"
MODEL_SETS="--set model.n_layer=4 --set model.n_embd=256 --set model.n_head=4 --set model.vocab_size=16 \
--set train.batch_size=4 --set train.seq_len=64 --set train.threads=1"
"$BIN" data synth --out "$OUT/data" --vocab 16 --order 2 --concentration 30 --seed 3 \
  --train-tokens 400000 --val-tokens 20000 >>"$LOG" 2>&1
DATA_SETS="--set data.train=$OUT/data/train.bin --set data.val=$OUT/data/val.bin"
TRAIN_SETS="$MODEL_SETS $DATA_SETS --set train.steps=$STEPS --set train.val_every=0 --set train.log_every=1000 \
--set checkpoint.every=0 --set optimizer.warmup_steps=2 --set parallel.timeout_s=60"

# ---- compute calibration: two concurrent 1-rank runs (both cores busy, as with two ranks) ----
say "calibrating compute: 2 concurrent 1-rank bench step runs"
for i in 0 1; do
  "$BIN" bench step --config "$CONFIG" $MODEL_SETS $DATA_SETS --steps 8 --warmup 2 >"$OUT/compute_$i.txt" 2>&1 &
done
wait
cat "$OUT/compute_0.txt" >>"$LOG"

VA="${TAG}va"
# ---- the delay line, for settings with a delay ----
DELAY_REASON=""
if [[ "$SETTINGS" == *@* ]]; then
  if [ -z "$DELAY_LINE" ]; then
    for d in "$(dirname "$BIN")/tests/delay_line" "$ROOT"/build*/tests/delay_line; do
      [ -x "$d" ] && { DELAY_LINE=$d; break; }
    done
  fi
  if [ -z "$DELAY_LINE" ] && command -v c++ >/dev/null; then
    say "compiling the delay line into $OUT/delay_line"
    c++ -O2 -std=c++17 -o "$OUT/delay_line" "$NETNS/delay_line.cpp" >>"$LOG" 2>&1 && DELAY_LINE="$OUT/delay_line"
  fi
  if [ ! -x "$DELAY_LINE" ]; then DELAY_REASON="no delay_line executable (build the delay_line target or pass --delay-line)"
  elif ! [ -c /dev/net/tun ]; then DELAY_REASON="no /dev/net/tun (the delay line needs a TUN device)"
  fi
fi

rtt_ms() {  # median round trip of a 1-byte TCP ping-pong from host a to host b (python3, 200 rounds)
  ip netns exec "${TAG}b" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], 5999))
s.listen(1); s.settimeout(10); c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while (d := c.recv(1)): c.sendall(d)' "$B" &
  local server=$!
  ip netns exec "${TAG}a" python3 -c '
import socket, statistics, sys, time
for _ in range(100):
    try: c = socket.create_connection((sys.argv[1], 5999), timeout=10); break
    except OSError: time.sleep(0.05)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); t = []
for i in range(210):
    t0 = time.perf_counter(); c.sendall(b"x"); c.recv(1); t.append(time.perf_counter() - t0)
print(f"{statistics.median(t[10:]) * 1e3:.3f}")' "$B" || echo nan
  wait $server || true
}

mpi() {  # mpirun in host a, rank 0 there and rank 1 in host b; the link is the veth pair only
  TT_NETNS_HOSTS="$A=${TAG}a $B=${TAG}b" timeout "${MPI_TIMEOUT:-300}" ip netns exec "${TAG}a" \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 --host "$A:1,$B:1" \
    --mca plm_rsh_agent "$NETNS/netns_rsh.sh" \
    --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET.0/24" --mca oob_tcp_if_include "$SUBNET.0/24" "$@"
}

shape() {  # shape RATE: tbf on both ends (a delay is the delay line's, set up with the network)
  local rate=$1 bits burst
  bits=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit','$rate'.lower()); print(int(float(m[1])*{'':1,'k':1e3,'m':1e6,'g':1e9}[m[2]]))")
  burst=$(( bits / 8 / 1000 )); [ $burst -lt 65536 ] && burst=65536  # 1 ms of line rate, >= one GSO packet
  for h in a b; do
    ip netns exec "${TAG}$h" tc qdisc replace dev "${TAG}v$h" root handle 1: tbf rate "$rate" burst "$burst" latency 20ms
  done
}

for setting in ${SETTINGS//,/ }; do
  rate=${setting%@*}; delay_ms=0
  [ "$setting" != "$rate" ] && { delay_ms=${setting#*@}; delay_ms=${delay_ms%ms}; }
  dir="$OUT/$setting"
  rm -rf "$dir"; mkdir -p "$dir"
  if [ "$delay_ms" != 0 ] && [ -n "$DELAY_REASON" ]; then
    say "== $setting: SKIPPED ($DELAY_REASON)"
    echo "$DELAY_REASON" >"$dir/skipped"
    continue
  fi
  say "== $setting"
  if [ "$delay_ms" = 0 ]; then
    sh "$NETNS/netns_setup.sh" up "$TAG" "$SUBNET"
  else
    sh "$NETNS/netns_setup.sh" up "$TAG" "$SUBNET" --delay-ms "$delay_ms" --delay-line "$DELAY_LINE" \
      --owner-pid $$ --delay-log "$dir/delay_line.log"
  fi
  shape "$rate"
  ip netns exec "${TAG}a" tc qdisc show dev "$VA" >"$dir/tc.txt"
  rtt=$(rtt_ms)
  echo "rate=$rate delay_ms=$delay_ms rtt_ms=$rtt" >"$dir/link"
  say "   link: tbf $rate, one-way delay $delay_ms ms; TCP round trip $rtt ms"
  say "   probe (calibration)"
  mpi "$BIN" probe --no-gpu --dump "$dir/topology.pbtxt" --sizes 4K,16M --iters 10 >"$dir/probe.txt" 2>&1
  say "   bench comm"
  mpi "$BIN" bench comm --ops all_reduce,reduce_scatter_v,all_gather_v --sizes "$SIZES" --iters 5 --warmup 2 \
    >"$dir/bench_comm.txt" 2>&1
  "$BIN" plan --topology "$dir/topology.pbtxt" --predict-collective all_reduce,reduce_scatter,all_gather \
    --bytes "$SIZES" --json >"$dir/predict.json"
  for round in $(seq 1 "$ROUNDS"); do
    for cand in $CANDIDATES; do
      IFS=: read -r mb comp zero <<<"$cand"
      name="${mb}MB-${comp}-zero${zero}"
      say "   train $name (round $round)"
      mpi "$BIN" train --config "$CONFIG" $TRAIN_SETS --set logging.run_dir="$dir/train/$name/round$round" \
        --set parallel.bucket_cap_mb="$mb" --set parallel.grad_compression="$comp" --set parallel.zero_stage="$zero" \
        >"$dir/train_$name.$round.txt" 2>&1 ||
        { say "   train $name FAILED (see $dir/train_$name.$round.txt)"; mkdir -p "$dir/train/$name/round$round"; touch "$dir/train/$name/round$round/FAILED"; }
    done
  done
  echo "$CANDIDATES" >"$dir/candidates"
  sh "$NETNS/netns_setup.sh" down "$TAG"
done

# ---- the report: predictions (planner fed the calibrated compute) vs measurements ----
python3 - "$OUT" "$BIN" "$CONFIG" "$SKIP" "$MODEL_SETS" "$SETTINGS" "$DELAY_REASON" <<'PY'
import glob, json, os, re, statistics, subprocess, sys
out, binary, config, skip, model_sets, settings, delay_reason = sys.argv[1:8]
skip = int(skip)

def phases(path):
    ms = {}
    for line in open(path):
        m = re.match(r"(forward|backward|optimizer|total)\s+([0-9.]+)", line)
        if m: ms[m[1]] = float(m[2]) / 1e3
    return ms
comp = [phases(f"{out}/compute_{i}.txt") for i in (0, 1)]
fwd = statistics.mean(c["forward"] for c in comp)
bwd = statistics.mean(c["backward"] for c in comp)
opt = statistics.mean(c["optimizer"] for c in comp)

def err(p, m):
    return 100.0 * (p - m) / m if m > 0 else float("nan")

rows, picks, records = [], [], {"compute": {"forward_s": fwd, "backward_s": bwd, "optimizer_s": opt}, "settings": {}}
for setting in settings.split(","):
    d = f"{out}/{setting}"
    if os.path.exists(f"{d}/skipped"):
        picks.append(f"{setting}: skipped ({open(f'{d}/skipped').read().strip()})")
        continue
    rec = records["settings"].setdefault(setting, {})
    link = dict(kv.split("=") for kv in open(f"{d}/link").read().split())
    rec["link"] = {"rate": link["rate"], "one_way_delay_ms": float(link["delay_ms"]), "tcp_rtt_ms": float(link["rtt_ms"])}
    topo = open(f"{d}/topology.pbtxt").read()
    bw = re.search(r"inter_node_busbw_gbps: ([0-9.e+-]+)", topo)
    lat = re.search(r"inter_node_latency_us: ([0-9.e+-]+)", topo)
    rec["calibrated"] = {"busbw_gbps": float(bw[1]) if bw else None, "alpha_us": float(lat[1]) if lat else None}
    pred = {(p["collective"], p["bytes"]): p["time_s"] for p in json.load(open(f"{d}/predict.json"))["predictions"]}
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for line in open(f"{d}/bench_comm.txt"):
        # reduce_scatter_v / all_gather_v: ZeRO's calls, on which the probe calibrates those two ops
        m = re.match(r"(all_reduce|reduce_scatter|all_gather)(?:_v)?\s+([0-9.]+) (B|KiB|MiB|GiB)\s+\d+\s+([0-9.]+)", line)
        if not m: continue
        op, nbytes, t = m[1], int(float(m[2]) * units[m[3]]), float(m[4]) / 1e6
        if (op, nbytes) in pred:
            rows.append((setting, f"{op} {m[2]} {m[3]} (ms)", pred[(op, nbytes)] * 1e3, t * 1e3))
            rec.setdefault("collectives", []).append({"op": op, "bytes": nbytes, "predicted_s": pred[(op, nbytes)], "measured_s": t})
    plan = json.loads(subprocess.run(
        [binary, "plan", "--config", config, *model_sets.split(), "--topology", f"{d}/topology.pbtxt",
         "--backward-s", str(bwd), "--forward-s", str(fwd), "--optimizer-s", str(opt),
         "--json", "--top", "0"],
        check=True, capture_output=True, text=True).stdout)
    rec["planner_global_pick"] = plan["pick"]["label"] if plan["pick"] else None
    measured, predicted, eligible = {}, {}, set()
    for cand in open(f"{d}/candidates").read().split():
        mb, compression, zero = cand.split(":")
        name = f"{mb}MB-{compression}-zero{zero}"
        payload = {"none": "fp32", "bf16": "bf16", "int8": "int8+ef"}[compression]
        c = next(c for c in plan["candidates"] if (zero == "3" or c["bucket_mb"] == float(mb)) and c["payload"] == payload
                 and c["zero_stage"] == int(zero) and c["shape"] == "ring")
        # Every round's steps after the first `skip`; the round with the lowest median step counts.
        rounds = [[json.loads(l) for l in open(f)][skip:] for f in sorted(glob.glob(f"{d}/train/{name}/round*/metrics.jsonl"))
                  if not os.path.exists(os.path.join(os.path.dirname(f), "FAILED"))]  # a failed run's steps do not count
        rounds = [r for r in rounds if r]
        steps = min(rounds, key=lambda r: statistics.median(s["step_s"] for s in r)) if rounds else []
        if not steps:
            rows.append((setting, f"step {name} (ms)", c["step_s"] * 1e3, float("nan")))
            continue
        step = statistics.median(s["step_s"] for s in steps)
        exposed = statistics.median(s["exposed_comm_s"] for s in steps)
        comm = statistics.median(s["comm_s"] for s in steps)
        measured[name], predicted[name] = step, c["step_s"]
        if c["eligible"]:
            eligible.add(name)
        rows.append((setting, f"step {name} (ms)", c["step_s"] * 1e3, step * 1e3))
        rows.append((setting, f"exposed comm {name} (ms)", (c["exposed_s"] + c["gather_s"]) * 1e3, exposed * 1e3))
        rec.setdefault("train", []).append({"candidate": name, "planner_label": c["label"],
            "predicted": {"step_s": c["step_s"], "exposed_s": c["exposed_s"] + c["gather_s"], "comm_s": c["comm_s"] + c["gather_s"]},
            "measured": {"step_s": step, "exposed_comm_s": exposed, "comm_s": comm, "steps": len(steps),
                         "rounds": len(rounds)}})
    if measured:
        # The planner picks among eligible candidates (ZeRO-3 only when no lower stage fits), as `auto` does.
        pool = {k: v for k, v in predicted.items() if k in eligible} or predicted
        p, m = min(pool, key=pool.get), min(measured, key=measured.get)
        close = (measured[p] - measured[m]) / measured[m] * 100
        line = (f"{setting}: planner pick: {p} (predicted fastest of the eligible candidates run) - measured fastest: {m}"
                + ("  [MATCH]" if p == m else f"  [differ: the pick measured {close:+.1f}% slower]")
                + f"; planner's pick over all its candidates: {rec['planner_global_pick']}")
        picks.append(line)
        rec["pick"], rec["measured_fastest"] = p, m

lines = [f"compute calibrated (2 concurrent 1-rank runs): forward {fwd*1e3:.1f} ms, backward {bwd*1e3:.1f} ms, optimizer {opt*1e3:.1f} ms",
         ""]
for s in records["settings"]:
    c, l = records["settings"][s].get("calibrated", {}), records["settings"][s]["link"]
    lines.append(f"{s}: tbf {l['rate']}, one-way delay {l['one_way_delay_ms']:g} ms, TCP round trip {l['tcp_rtt_ms']:.3f} ms; "
                 f"calibrated busbw {c.get('busbw_gbps')} GB/s, alpha {c.get('alpha_us')} us")
lines += ["", "| setting | quantity | predicted | measured | error % |", "|---|---|---|---|---|"]
for s, q, p, m in rows:
    lines.append(f"| {s} | {q} | {p:.2f} | {m:.2f} | {err(p, m):+.1f} |")
lines += [""] + picks
if delay_reason: lines += ["", f"note: settings with a delay skipped: {delay_reason}"]
text = "\n".join(lines)
print(text)
open(f"{out}/results.md", "w").write(text + "\n")
json.dump(records, open(f"{out}/results.json", "w"), indent=2)

# The picture: predicted vs measured step time per candidate, one colour per setting, with the
# y = x line and the +-20% band of the goal (gnuplot; skipped with a note when it is missing).
steps = [(s, p, m) for s, q, p, m in rows if q.startswith("step ") and m == m]
if steps:
    settings_seen = list(dict.fromkeys(s for s, _, _ in steps))
    with open(f"{out}/steps.dat", "w") as f:
        for s in settings_seen:
            f.write(f"# {s}\n" + "".join(f"{m:.3f} {p:.3f}\n" for t, p, m in steps if t == s) + "\n\n")
    top = 1.15 * max(max(p, m) for _, p, m in steps)
    plots = [f"x title 'predicted = measured' lc rgb '#444444'",
             f"1.2*x dt 2 lc rgb '#999999' title '+-20%'", "0.8*x dt 2 lc rgb '#999999' notitle"]
    plots += [f"'{out}/steps.dat' index {i} with points pt 7 ps 1.2 title '{s}'" for i, s in enumerate(settings_seen)]
    script = (f"set terminal pngcairo noenhanced size 800,700 font ',11'\nset output '{out}/steps.png'\n"
              f"set title 'ground truth: step time per candidate'\nset xlabel 'measured (ms)'\n"
              f"set ylabel 'predicted (ms)'\nset xrange [0:{top}]\nset yrange [0:{top}]\nset grid\n"
              f"set key top left\nplot " + ", ".join(plots) + "\n")
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
        print(f"\nwrote {out}/steps.png")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"\nnote: {out}/steps.png not drawn ({e}); apt-get install gnuplot-nox")
PY
