#!/bin/bash
# User data of every streambench AWS instance (rendered by testbeds/aws/provision.py; runs once, as root, at boot).
# 1. Maximum lifetime: power off after @MAX_LIFETIME_MINUTES@ minutes. The instance is started with
#    instance-initiated shutdown = terminate, so powering off terminates it: a lost controller leaves no bill.
# 2. The instance-store NVMe disks, found by model ("Amazon EC2 NVMe Instance Storage", never by device name),
#    ordered by PCI address, formatted xfs, mounted noatime at /mnt/data-<n>; one directory per role inside:
#    @ROLES@. What was found is written to /etc/streambench/disks.json (read back by the host probe).
# 3. The open-file limit (below).
# 4. When it ends, however it ends: /var/lib/streambench/userdata-done holds "<exit status> <UTC time>" (written
#    atomically, readable by the login user). The controller waits for it with status 0 before Ansible starts
#    (testbeds/remote.py wait_for_hosts).
# SB_SYSFS, SB_DRYRUN: the tests run the disk discovery against a made-up sysfs tree and only print the commands;
# SB_STATE: the directory of the completion marker (the tests' own; with SB_DRYRUN and no SB_STATE none is written);
# SB_DEV: where the disks' device nodes are (the AWS rehearsal's lab hosts: links to loop devices; testbeds/lab.py).
set -euo pipefail
SYSFS=${SB_SYSFS:-/sys}
STATE=${SB_STATE:-/var/lib/streambench}
DEV=${SB_DEV:-/dev}
run() { if [ -n "${SB_DRYRUN:-}" ]; then echo "+ $*"; else "$@"; fi; }
append() { if [ -n "${SB_DRYRUN:-}" ]; then echo "+ append to $1: $2"; else echo "$2" >> "$1"; fi; }
finished() {
  local rc=$?
  if [ -z "${SB_DRYRUN:-}" ] || [ -n "${SB_STATE:-}" ]; then
    mkdir -p "$STATE" && chmod 755 "$STATE" \
      && echo "$rc $(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$STATE/userdata-done.tmp" \
      && chmod 644 "$STATE/userdata-done.tmp" && mv -f "$STATE/userdata-done.tmp" "$STATE/userdata-done"
  fi
}
trap finished EXIT

if [ -z "${SB_DRYRUN:-}" ]; then
  systemd-run --unit=streambench-max-lifetime --on-active=@MAX_LIFETIME_MINUTES@m /bin/systemctl poweroff --force \
    || shutdown -h +@MAX_LIFETIME_MINUTES@ "streambench: maximum lifetime reached"
else
  echo "+ poweroff after @MAX_LIFETIME_MINUTES@ minutes"
fi

# Open files: study 003's fan-out runs hold up to 100 000 consumers (about 6 open files each in a Kafka runner,
#    workloads/fanout.py); scales.aws.fd_limit (workloads/experiments.yaml) is this hard limit. The ssh sessions
#    that start the nodes and the runner read it from limits.d; each process raises its soft limit to it.
run mkdir -p /etc/security/limits.d
append /etc/security/limits.d/90-streambench.conf "* hard nofile 1048576"
append /etc/security/limits.d/90-streambench.conf "* soft nofile 1048576"

WANT=@DISKS@
disks=()
while read -r pci name; do disks+=("$name"); done < <(
  for dev in "$SYSFS"/block/nvme*n1; do
    [ -e "$dev/device/model" ] || continue
    model=$(sed 's/[[:space:]]*$//' "$dev/device/model")
    [ "$model" = "Amazon EC2 NVMe Instance Storage" ] || continue
    echo "$(readlink -f "$dev/device" | sed 's#.*/\([0-9a-f]*:[0-9a-f]*:[0-9a-f]*\.[0-9a-f]*\)/.*#\1#') $(basename "$dev")"
  done | sort)
if [ "${#disks[@]}" -lt "$WANT" ]; then
  echo "streambench: found ${#disks[@]} instance-store NVMe disks, need $WANT" >&2
  exit 1
fi
run mkdir -p /etc/streambench
json="["
for i in $(seq 1 "$WANT"); do
  dev=$DEV/${disks[$((i - 1))]}
  mnt=/mnt/data-$i
  run mkfs.xfs -f "$dev"
  run mkdir -p "$mnt"
  run mount -o noatime "$dev" "$mnt"
  append /etc/fstab "$dev $mnt xfs noatime,nofail 0 2"
  size=$(( $(cat "$SYSFS/block/${disks[$((i - 1))]}/size") * 512 ))
  json+="{\"device\": \"$dev\", \"model\": \"Amazon EC2 NVMe Instance Storage\", \"mount\": \"$mnt\", \"filesystem\": \"xfs\", \"sizeBytes\": $size},"
done
for pair in @ROLES@; do
  role=${pair%%=*}; n=${pair#*=}
  run mkdir -p "/mnt/data-$n/$role"
done
json="${json%,}]"
if [ -n "${SB_DRYRUN:-}" ]; then echo "$json"; else echo "$json" > /etc/streambench/disks.json; fi
