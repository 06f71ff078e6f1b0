#!/bin/sh
# rsh agent for OpenMPI's plm (mpirun --mca plm_rsh_agent netns_rsh.sh): "logs in" to a host of the
# two-namespace rehearsal network made by netns_setup.sh by running the command in that host's
# network namespace instead of over ssh.
#
# OpenMPI invokes it as `netns_rsh.sh <host> <command words...>` where the words form one shell
# command line (as ssh would pass them to the remote shell), e.g.
#   netns_rsh.sh 10.231.17.2 orted -mca ess "env" -mca ess_base_jobid "123" ... --tree-spawn ...
# The host -> namespace map comes from the environment mpirun passes down:
#   TT_NETNS_HOSTS="10.231.17.1=tt123a 10.231.17.2=tt123b"
# A host missing from the map is an error (exit 255, like ssh), never a silent local launch.
# With TT_NETNS_LOG set, each launch appends "<host> <namespace>" to that file (the test checks that
# rank 1's daemon really started in host b).
#
# Working mpirun line (OpenMPI 4.1; mpirun itself runs inside host a, like a head node):
#   TT_NETNS_HOSTS="$A=tt123a $B=tt123b" ip netns exec tt123a \
#     mpirun --allow-run-as-root --oversubscribe -np 2 --host $A:1,$B:1 \
#       --mca plm_rsh_agent tests/parallel/ddp/netns_rsh.sh \
#       --mca btl tcp,self --mca btl_tcp_if_include 10.231.17.0/24 --mca oob_tcp_if_include 10.231.17.0/24 \
#       topotrain train ...
set -eu

host=${1:?usage: netns_rsh.sh HOST COMMAND...}
shift
ns=""
for entry in ${TT_NETNS_HOSTS:-}; do
  if [ "${entry%%=*}" = "$host" ]; then ns=${entry#*=}; fi
done
if [ -z "$ns" ]; then
  echo "netns_rsh.sh: host '$host' is not in TT_NETNS_HOSTS ('${TT_NETNS_HOSTS:-}')" >&2
  exit 255
fi
if [ -n "${TT_NETNS_LOG:-}" ]; then echo "$host $ns" >>"$TT_NETNS_LOG"; fi
exec ip netns exec "$ns" sh -c "$*"
