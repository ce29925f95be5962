# Sourced by the scripts that run a cargo subcommand from crates.io (scripts/deny.sh,
# scripts/release.sh). `cargo_tool NAME VERSION` installs NAME at exactly VERSION, with the
# versions of its own Cargo.lock (--locked), into the user's cache when it is not there yet, and
# prints the path of its binary. Each version has a directory of its own, so changing a pin
# installs the new one beside the old.

cargo_tool() {
    local name=$1 version=$2
    local root="${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/cargo-tools/$name-$version"
    if [ ! -x "$root/bin/$name" ]; then
        echo "installing $name $version (crates.io) into $root" >&2
        cargo install --quiet --locked --root "$root" --version "=$version" "$name" >&2
    fi
    echo "$root/bin/$name"
}
