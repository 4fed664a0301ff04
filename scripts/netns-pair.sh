# Sourced by the device's netns phase (scripts/device/phases/netns.sh) and by
# test/tools/netns_generic_tcp.sh: two network namespaces of this host joined by a veth pair
# (MTU 1500), which stand in for two nodes when
# UCX_TLS leaves out cuda_ipc and shared memory. The caller sets netns_ip, the ip command as an
# array (the device's own, or a carried one with its libraries).

# netns_pair A B VA VB NET: makes namespaces A and B anew, veth VA in A (NET.1/24) and VB in B
# (NET.2/24), both up with their loopback, and waits for carrier (UCX finds no TCP interface
# before: a run started at once failed). Returns non-zero, its output on stderr, when it cannot.
netns_pair() {
  local a=$1 b=$2 va=$3 vb=$4 net=$5
  netns_down "$a" "$b"
  "${netns_ip[@]}" netns add "$a" && "${netns_ip[@]}" netns add "$b" &&
    "${netns_ip[@]}" link add "$va" netns "$a" type veth peer name "$vb" netns "$b" &&
    "${netns_ip[@]}" -n "$a" addr add "$net.1/24" dev "$va" &&
    "${netns_ip[@]}" -n "$b" addr add "$net.2/24" dev "$vb" &&
    "${netns_ip[@]}" -n "$a" link set "$va" up && "${netns_ip[@]}" -n "$b" link set "$vb" up &&
    "${netns_ip[@]}" -n "$a" link set lo up && "${netns_ip[@]}" -n "$b" link set lo up || return 1
  for _ in $(seq 100); do
    [[ $("${netns_ip[@]}" -n "$a" link show "$va") == *"state UP"* &&
       $("${netns_ip[@]}" -n "$b" link show "$vb") == *"state UP"* ]] && return 0
    sleep 0.1
  done
}

# netns_down A B: removes both namespaces (and so the veth pair), quietly.
netns_down() { "${netns_ip[@]}" netns del "$1"; "${netns_ip[@]}" netns del "$2"; } 2>/dev/null
