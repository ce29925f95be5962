#!/usr/bin/env bash
# Builds shardgate's container image with podman (Debian's podman, buildah and runc; no Docker
# daemon, no image pulled from any registry) from Containerfile:
#
#   1. the `dist` binary, built on this machine (scripts/dist-build.sh):
#        cargo build --locked --profile dist -p shardgate-api --bin shardgate
#      with its target directory in the user's cache (SHARDGATE_DIST_TARGET, by default
#      ~/.cache/shardgate/dist-target), outside the checkout, so the compiled dependencies stay
#      built across runs and a source change recompiles only the crates it touches;
#   2. the build context: the binary, and runtime.tar with what it needs at run time, taken from
#      this machine's Debian packages (the shared libraries `ldd` names and the dynamic loader,
#      the CA certificates), plus /etc/passwd, /etc/group and /etc/nsswitch.conf written here,
#      /tmp and the data directory;
#   3. `podman build --format docker` (HEALTHCHECK is Docker's) on `FROM scratch`, with layers
#      cached: a source change rebuilds only the binary's layer.
#
#   scripts/image.sh                   # builds localhost/shardgate:dev
#   SHARDGATE_IMAGE=localhost/shardgate:1.2.3 scripts/image.sh
#
# Prints the image's name, ID and size, and the time each part took. The image is kept in
# scripts/podman.sh's store (`source scripts/podman.sh && run_podman images`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/podman.sh
source scripts/dist-build.sh

IMAGE="${SHARDGATE_IMAGE:-localhost/shardgate:dev}"

if [ ! -e /etc/ssl/certs/ca-certificates.crt ]; then
    echo "installing ca-certificates (Debian package)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ca-certificates >/dev/null
fi

started=$(date +%s)
build_dist
binary="$dist_binary"
built=$(date +%s)

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
runtime="$context/runtime"
# Directories made on the way are 0755 whatever the caller's umask.
umask 022
install -d -m 0755 "$runtime"

# The binary keeps its modification time: an unchanged build makes the same layer.
cp --preserve=mode,timestamps "$binary" "$context/shardgate"

# Every shared library the binary loads, under the path the loader looks for it at, and the
# loader itself (the ELF interpreter, e.g. /lib64/ld-linux-x86-64.so.2). glibc 2.34 and later
# carry the files and DNS name services inside libc itself, so nothing is loaded by name later.
libraries=$(ldd "$binary")
if grep -q "not found" <<<"$libraries"; then
    echo "$libraries" >&2
    echo "ldd: a library the binary needs is missing on this machine" >&2
    exit 1
fi
echo "the binary's libraries, from Debian's packages:"
for path in $(grep -o '/[^ ]*' <<<"$libraries" | sort -u); do
    file=$(readlink -f "$path")
    install -D -m 0755 "$file" "$runtime$path"
    package=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
    printf '  %-40s %s %s\n' "$path" "${package:-?}" "$(dpkg-query -W -f '${Version}' "${package:-none}" 2>/dev/null)"
done

install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$runtime/etc/ssl/certs/ca-certificates.crt"
# The numeric user the image runs as, named so that tools showing users have a name to show.
install -d "$runtime/etc"
cat >"$runtime/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
shardgate:x:65532:65532:shardgate:/var/lib/shardgate:/sbin/nologin
PASSWD
cat >"$runtime/etc/group" <<'GROUP'
root:x:0:
shardgate:x:65532:
GROUP
# Host names: the files podman and Kubernetes mount (/etc/hosts), then DNS.
cat >"$runtime/etc/nsswitch.conf" <<'NSSWITCH'
passwd: files
group: files
hosts: files dns
NSSWITCH
chmod 0644 "$runtime/etc/passwd" "$runtime/etc/group" "$runtime/etc/nsswitch.conf"
# /tmp is everyone's, as always; the data directory is the user's and no one else's.
install -d -m 1777 "$runtime/tmp"
install -d -m 0700 -o 65532 -g 65532 "$runtime/var/lib/shardgate"
# One tar file, which keeps owners and modes; sorted and dated alike every time, so the same
# files make the same file, and podman's cache the same layer.
tar --create --file "$context/runtime.tar" --sort=name --mtime=@0 --numeric-owner -C "$runtime" .

staged=$(date +%s)
run_podman build --quiet --format docker --pull=never --layers -f Containerfile -t "$IMAGE" "$context" >/dev/null
# Earlier builds of the same name, now untagged, would otherwise stay in the store.
run_podman image prune --force >/dev/null
finished=$(date +%s)

id=$(run_podman image inspect --format '{{.Id}}' "$IMAGE")
size=$(run_podman image inspect --format '{{.Size}}' "$IMAGE")
printf 'built %s (%.12s): %s bytes (%s MB); binary %s bytes\n' "$IMAGE" "$id" "$size" "$((size / 1000000))" \
    "$(stat -c %s "$binary")"
printf 'times: cargo build %ss, context %ss, podman build %ss\n' "$((built - started))" \
    "$((staged - built))" "$((finished - staged))"
