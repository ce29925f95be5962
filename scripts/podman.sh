# Sourced by the scripts that build or run the container image (scripts/image.sh,
# scripts/image-check.sh). Installs Debian's podman, buildah and runc when they are missing and
# defines `run_podman`: podman with the options these machines need, which have no Docker daemon
# and no systemd:
#
#   --storage-driver vfs          plain directories for layers (no overlay mounts)
#   --runtime runc                crun refuses this kernel's cgroup set-up
#   --cgroup-manager cgroupfs     no systemd to ask for cgroups
#   --events-backend file         no journald
#   --root                        a store of shardgate's own in the user's cache, so the cached
#                                 layers survive between runs and no other podman set-up on the
#                                 machine (another storage driver) is disturbed
#   --runroot, --tmpdir           its run-time state, under /run (gone at a reboot, as it must be)
#
# Set SHARDGATE_IMAGE_STORE to keep the store elsewhere. By hand, with the same store:
#   source scripts/podman.sh && run_podman images

SHARDGATE_IMAGE_STORE="${SHARDGATE_IMAGE_STORE:-${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/containers}"
SHARDGATE_IMAGE_RUN="${XDG_RUNTIME_DIR:-/run}/shardgate-containers"

if ! command -v podman >/dev/null || ! command -v buildah >/dev/null || ! command -v runc >/dev/null; then
    echo "installing podman, buildah and runc (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc >/dev/null
fi

run_podman() {
    podman --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend file \
        --root "$SHARDGATE_IMAGE_STORE" --runroot "$SHARDGATE_IMAGE_RUN/storage" \
        --tmpdir "$SHARDGATE_IMAGE_RUN/libpod" "$@"
}
