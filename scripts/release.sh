#!/usr/bin/env bash
# Builds the release artefacts of a commit (by default HEAD; give a tag to build that release):
#
#   shardgate-<version>-<target>             the `dist` binary (release, stripped)
#   shardgate-<version>-<target>.cdx.json    its SBOM: CycloneDX 1.5 JSON, every crate the
#                                            binary is built from with version, licence, and
#                                            the checksum Cargo.lock pins (cargo-cyclonedx)
#   SHA256SUMS                               the SHA-256 of both (`sha256sum -c SHA256SUMS`)
#
# in target/release-artefacts/<version>/ (or the directory given second). <version> is the tag
# that names the commit, else `git describe` of it. The sources are the commit's, exported with
# `git archive` (never the working tree's edits); the build is scripts/image.sh's
# (scripts/dist-build.sh): `cargo build --locked --profile dist -p shardgate-api --bin shardgate`
# with the target directory in the user's cache (compiled dependencies kept). cargo-cyclonedx (crates.io, pinned below) is
# installed into the user's cache by scripts/cargo-tool.sh. The SBOM carries no random serial
# number and no time but the commit's (SOURCE_DATE_EPOCH), so the same commit gives the same SBOM.
#
#   scripts/release.sh                        # HEAD
#   scripts/release.sh v0.2.0                 # a tag
#   scripts/release.sh v0.2.0 /srv/releases/  # elsewhere
set -euo pipefail
# The output directory, if given, is taken from where the script was called.
out_arg="${2:+$(realpath -m -- "$2")}"
cd "$(dirname "$0")/.."
source scripts/cargo-tool.sh
source scripts/dist-build.sh

CARGO_CYCLONEDX_VERSION=0.5.9
cargo_cyclonedx=$(cargo_tool cargo-cyclonedx "$CARGO_CYCLONEDX_VERSION")

ref="${1:-HEAD}"
commit=$(git rev-parse --verify --quiet "$ref^{commit}") || { echo "no commit named $ref" >&2; exit 2; }
version=$(git describe --tags --exact-match "$commit" 2>/dev/null || git describe --tags --always "$commit")
target=$(rustc -vV | sed -n 's/^host: //p')
out="${out_arg:-$PWD/target/release-artefacts/$version}"
name="shardgate-$version-$target"
epoch=$(git show -s --format=%ct "$commit")

source_dir=$(mktemp -d)
trap 'rm -rf "$source_dir"' EXIT
# `tar -m`: the files get the time of the export, not the commit's (scripts/dist-build.sh builds
# the workspace's crates again for a checkout it did not build last, whatever the times).
git archive --format=tar "$commit" | tar -x -m -C "$source_dir"

echo "building $name from $commit"
(cd "$source_dir" && build_dist)
mkdir -p "$out"
install -m 0755 "$DIST_TARGET/dist/shardgate" "$out/$name"

# One SBOM per workspace crate, each beside its Cargo.toml in the export; the binary's is
# shardgate-api's. For the release's target only, with build dependencies (they shape the
# binary: proc macros, build scripts) and without dev-dependencies.
# SOURCE_DATE_EPOCH for this step only: the build's own environment stays scripts/image.sh's, or
# crates whose build scripts read it (ring) would be built again, here and in the next image.
(cd "$source_dir" && SOURCE_DATE_EPOCH="$epoch" \
    PATH="$(dirname "$cargo_cyclonedx"):$PATH" cargo cyclonedx --quiet --format json \
    --spec-version 1.5 --target "$target" --all)
install -m 0644 "$source_dir/api/shardgate-api.cdx.json" "$out/$name.cdx.json"

(cd "$out" && sha256sum "$name" "$name.cdx.json" >SHA256SUMS && sha256sum --quiet -c SHA256SUMS)
echo "release artefacts of $version ($commit) in $out:"
(cd "$out" && ls -l "$name" "$name.cdx.json" SHA256SUMS && cat SHA256SUMS)
