# Sourced by scripts/build-bundle.sh and scripts/gpu-carry.sh: copies the shared libraries a
# binary needs (as ldd resolves them here) into a directory the binary's RPATH names.
#   bundle_libraries DEST_LIB_DIR CARRY_CXX_RUNTIME BINARY...
# glibc's own libraries (libc, libm, libdl, libpthread, librt, ld.so) never travel: they must
# match the kernel interface and the loader of the machine that runs the binary. libstdc++ and
# libgcc_s travel when CARRY_CXX_RUNTIME is 1 (a job image may be older than this build
# machine), and not when 0 (the GPU node's are newer than Debian 12's).
bundle_libraries() {
  local dest=$1 cxx=$2 bin lib
  shift 2
  mkdir -p "$dest"
  for bin in "$@"; do
    [[ -f $bin ]] || continue
    ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
      [[ $(realpath "$lib") == "$(realpath "$dest")"/* ]] && continue # already carried
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) ;;
        libstdc++.so*|libgcc_s.so*) if [[ $cxx == 1 ]]; then cp -L "$lib" "$dest/"; fi ;;
        *) cp -L "$lib" "$dest/" ;;
      esac
    done
  done
}

# Like bundle_libraries, for a binary built against another root filesystem (a sysroot): each
# DT_NEEDED name, then theirs, is looked up in ROOT's library directories, as ROOT's loader would,
# and copied; glibc's own libraries stay behind. Fails naming a library ROOT does not have.
#   bundle_libraries_from_root DEST_LIB_DIR ROOT BINARY...
bundle_libraries_from_root() {
  local dest=$1 root=$2 name dir found
  shift 2
  mkdir -p "$dest"
  local -a queue=("$@")
  while ((${#queue[@]})); do
    local file=${queue[0]}
    queue=("${queue[@]:1}")
    for name in $(objdump -p "$file" | awk '$1 == "NEEDED" {print $2}'); do
      case "$name" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*) continue ;;
      esac
      [[ -e $dest/$name ]] && continue
      found=""
      for dir in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib usr/lib; do
        if [[ -e $root/$dir/$name ]]; then found=$root/$dir/$name; break; fi
      done
      [[ -n $found ]] || { echo "bundle: $name (needed by $(basename "$file")) is not in $root" >&2; return 1; }
      # An absolute symlink in the root points into the root, not into this machine.
      while [[ -L $found ]]; do
        local target
        target=$(readlink "$found")
        if [[ $target == /* ]]; then found=$root$target; else found=$(dirname "$found")/$target; fi
      done
      cp "$found" "$dest/$name"
      chmod u+w "$dest/$name"
      queue+=("$dest/$name")
    done
  done
}

# The newest GLIBC_x.y symbol version any of the files needs: the oldest glibc they run on.
bundle_glibc_floor() {
  objdump -T "$@" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1
}
