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

# The newest GLIBC_x.y symbol version any of the files needs: the oldest glibc they run on.
bundle_glibc_floor() {
  objdump -T "$@" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1
}
