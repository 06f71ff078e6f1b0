#!/bin/sh
# Two-"host" rehearsal network for tests/parallel/ddp/netns_test.cpp: two network namespaces joined
# by one veth pair, each with lo up and one address in a /24 that exists only inside them.
#
#   netns_setup.sh up   TAG SUBNET   # SUBNET like 10.231.17 -> hosts SUBNET.1 (TAG"a") and SUBNET.2 (TAG"b")
#   netns_setup.sh up   TAG SUBNET --delay-ms MS --delay-line PATH [--owner-pid PID] [--delay-log FILE]
#   netns_setup.sh down TAG          # idempotent; ends the processes left in the namespaces (the delay
#                                    # line, a failed run's ranks), then removes them and so every link
#
# Design: nothing is added to the root namespace (no bridge, no address, no route), so no traffic
# can leave the namespaces and the root's firewall (e.g. br_netfilter + a DROP forward policy,
# as Docker sets) cannot interfere. Needs root / CAP_NET_ADMIN. On a failed `up` the partial setup
# is removed before exiting non-zero (trap).
#
# With --delay-ms (latency emulation where the kernel has no sch_netem) the hosts keep their names,
# interfaces (TAG"va", TAG"vb") and addresses, but each veth goes to a third namespace TAG"r", a
# router that sends everything arriving from either host through a TUN device TAG"t" (policy
# routing: `ip rule iif TAG"ra"/TAG"rb" lookup 100`, table 100 `default dev TAG"t"`), where
# PATH (tests/parallel/ddp/delay_line.cpp) holds each packet MS milliseconds, FIFO, and writes it
# back; from the TUN the packet is routed normally (main table) to the other host. Each direction is
# delayed once: RTT = 2 MS + the delay line's own overhead. Neighbours are static (no ARP through the
# router, whose veths have no address); the MTU stays 1500 (the TUN takes TCP GSO super-packets
# whole, so userspace sees ~20k packets/s at 10 Gbit/s). Rate limits (tc tbf) still go on TAG"va" /
# TAG"vb" as without the delay. The delay line exits when PID (--owner-pid) does, ignores a SIGINT
# its starter ignores (a Ctrl-C of the run it serves must not cut the link mid-collective), and
# `down` ends it (SIGTERM, then SIGKILL). --delay-log FILE gets its counters on exit.
set -eu

cmd=${1:?usage: netns_setup.sh up TAG SUBNET [--delay-ms MS --delay-line PATH [--owner-pid PID] [--delay-log FILE]] | down TAG}
tag=${2:?missing TAG}

# Processes left in the namespaces: the delay line in the router, and in the hosts whatever a failed
# or interrupted run left behind (mpirun, orted, ranks). Only this network's users run there.
ns_pids() { for n in "${tag}r" "${tag}a" "${tag}b"; do ip netns pids "$n" 2>/dev/null || true; done; }

down() {
  pids=$(ns_pids)
  if [ -n "$pids" ]; then
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    i=0
    while [ -n "$(ns_pids)" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
    for p in $(ns_pids); do kill -KILL "$p" 2>/dev/null || true; done
  fi
  ip netns del "${tag}r" 2>/dev/null || true
  ip netns del "${tag}a" 2>/dev/null || true
  ip netns del "${tag}b" 2>/dev/null || true
}

mac() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }

case "$cmd" in
  down)
    down
    ;;
  up)
    subnet=${3:?missing SUBNET (three octets, e.g. 10.231.17)}
    shift 3
    delay_ms="" delay_line="" owner_pid="" delay_log=/dev/null
    while [ $# -gt 0 ]; do
      case "$1" in
        --delay-ms) delay_ms=${2:?}; shift ;;
        --delay-line) delay_line=${2:?}; shift ;;
        --owner-pid) owner_pid=${2:?}; shift ;;
        --delay-log) delay_log=${2:?}; shift ;;
        *) echo "netns_setup.sh: unknown option '$1'" >&2; exit 2 ;;
      esac
      shift
    done
    if [ -n "$delay_ms" ] && [ ! -x "$delay_line" ]; then
      echo "netns_setup.sh: --delay-ms needs --delay-line PATH to the delay_line executable (got '$delay_line')" >&2
      exit 2
    fi
    trap 'down' EXIT
    ip netns add "${tag}a"
    ip netns add "${tag}b"
    if [ -z "$delay_ms" ]; then
      # Interface names are limited to 15 characters: TAG is short (e.g. ttns12345).
      ip link add "${tag}va" netns "${tag}a" type veth peer name "${tag}vb" netns "${tag}b"
    else
      r="${tag}r" t="${tag}t"
      ip netns add "$r"
      # A router for IPv4 only: no reverse-path filter (packets from the TUN carry the hosts'
      # addresses), no redirects, no IPv6 chatter (MLD, router solicitations) through the delay line.
      ip netns exec "$r" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward
        for c in all default; do
          echo 0 >/proc/sys/net/ipv4/conf/$c/rp_filter; echo 0 >/proc/sys/net/ipv4/conf/$c/send_redirects
          if [ -e /proc/sys/net/ipv6/conf/$c/disable_ipv6 ]; then echo 1 >/proc/sys/net/ipv6/conf/$c/disable_ipv6; fi
        done'
      ip link add "${tag}va" netns "${tag}a" type veth peer name "${tag}ra" netns "$r"
      ip link add "${tag}vb" netns "${tag}b" type veth peer name "${tag}rb" netns "$r"
      ip -n "$r" tuntap add dev "$t" mode tun vnet_hdr
      ip -n "$r" link set "$t" txqueuelen 10000
      for d in lo "${tag}ra" "${tag}rb" "$t"; do ip -n "$r" link set "$d" up; done
    fi
    for h in a b; do
      ip -n "${tag}$h" link set lo up
      ip -n "${tag}$h" link set "${tag}v$h" up
    done
    ip -n "${tag}a" addr add "${subnet}.1/24" dev "${tag}va"
    ip -n "${tag}b" addr add "${subnet}.2/24" dev "${tag}vb"
    if [ -n "$delay_ms" ]; then
      ip -n "${tag}a" neigh replace "${subnet}.2" lladdr "$(mac "$r" "${tag}ra")" dev "${tag}va" nud permanent
      ip -n "${tag}b" neigh replace "${subnet}.1" lladdr "$(mac "$r" "${tag}rb")" dev "${tag}vb" nud permanent
      ip -n "$r" neigh replace "${subnet}.1" lladdr "$(mac "${tag}a" "${tag}va")" dev "${tag}ra" nud permanent
      ip -n "$r" neigh replace "${subnet}.2" lladdr "$(mac "${tag}b" "${tag}vb")" dev "${tag}rb" nud permanent
      ip -n "$r" route add "${subnet}.1/32" dev "${tag}ra"
      ip -n "$r" route add "${subnet}.2/32" dev "${tag}rb"
      ip -n "$r" route add default dev "$t" table 100
      ip -n "$r" rule add iif "${tag}ra" lookup 100 pref 100
      ip -n "$r" rule add iif "${tag}rb" lookup 100 pref 101
      # Started in the router namespace (so `down` finds it with `ip netns pids`), output to a file:
      # a caller reading this script's output must not wait for the delay line's end.
      set -- --tun "$t" --delay-ms "$delay_ms" --fifo
      [ -n "$owner_pid" ] && set -- "$@" --owner-pid "$owner_pid"
      ip netns exec "$r" "$delay_line" "$@" </dev/null >>"$delay_log" 2>&1 &
      # Ready when it has attached to the TUN (carrier on); without a reader the TUN drops everything.
      i=0
      until [ "$(ip netns exec "$r" cat "/sys/class/net/$t/carrier" 2>/dev/null)" = 1 ]; do
        if [ $i -ge 50 ] || ! kill -0 $! 2>/dev/null; then
          echo "netns_setup.sh: the delay line did not start ($delay_line; log: $delay_log)" >&2
          exit 1
        fi
        sleep 0.1
        i=$((i + 1))
      done
    fi
    trap - EXIT
    ;;
  *)
    echo "netns_setup.sh: unknown command '$cmd'" >&2
    exit 2
    ;;
esac
