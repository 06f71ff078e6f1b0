#!/bin/sh
# Two-"host" rehearsal network for tests/parallel/ddp/netns_test.cpp: two network namespaces joined
# by one veth pair, each with lo up and one address in a /24 that exists only inside them.
#
#   netns_setup.sh up   TAG SUBNET   # SUBNET like 10.231.17 -> hosts SUBNET.1 (TAG"a") and SUBNET.2 (TAG"b")
#   netns_setup.sh down TAG          # idempotent; removing the namespaces removes the veth pair too
#
# Design: nothing is added to the root namespace (no bridge, no address, no route), so no traffic
# can leave the two namespaces and the root's firewall (e.g. br_netfilter + a DROP forward policy,
# as Docker sets) cannot interfere. Needs root / CAP_NET_ADMIN. On a failed `up` the partial setup
# is removed before exiting non-zero (trap).
set -eu

cmd=${1:?usage: netns_setup.sh up TAG SUBNET | down TAG}
tag=${2:?missing TAG}

down() {
  ip netns del "${tag}a" 2>/dev/null || true
  ip netns del "${tag}b" 2>/dev/null || true
}

case "$cmd" in
  down)
    down
    ;;
  up)
    subnet=${3:?missing SUBNET (three octets, e.g. 10.231.17)}
    trap 'down' EXIT
    ip netns add "${tag}a"
    ip netns add "${tag}b"
    # Interface names are limited to 15 characters: TAG is short (e.g. ttns12345).
    ip link add "${tag}va" netns "${tag}a" type veth peer name "${tag}vb" netns "${tag}b"
    for h in a b; do
      ip -n "${tag}$h" link set lo up
      ip -n "${tag}$h" link set "${tag}v$h" up
    done
    ip -n "${tag}a" addr add "${subnet}.1/24" dev "${tag}va"
    ip -n "${tag}b" addr add "${subnet}.2/24" dev "${tag}vb"
    trap - EXIT
    ;;
  *)
    echo "netns_setup.sh: unknown command '$cmd'" >&2
    exit 2
    ;;
esac
