"""Django settings for stereorank, read from the environment.

Two modes:
- embedded (the default when DATABASE_URL is unset): SQLite under ``var/``, a
  filesystem Celery broker that needs no server, static files served from the
  apps' folders (no collectstatic). This is what the README's run command uses.
  DEBUG is off here too (annotators use this mode: Django's debug pages list
  every route); DJANGO_DEBUG=true turns it on.
- production: DATABASE_URL (PostgreSQL), REDIS_URL or CELERY_BROKER_URL,
  DJANGO_SECRET_KEY and DJANGO_ALLOWED_HOSTS from the environment, DEBUG off.

Past 400 lines because it is the one place the environment is read: each setting with
its default and a line on what it is for (storage's are in ``storage_settings``).
"""

from datetime import timedelta
from pathlib import Path

import environ

from web import csp_settings, storage_settings

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

DATABASE_URL = env.str("DATABASE_URL", default="")
EMBEDDED = env.bool("STEREORANK_EMBEDDED", default=not DATABASE_URL)
VAR_DIR = Path(env.str("STEREORANK_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DJANGO_DEBUG", default=False)
if EMBEDDED:
    SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="embedded-insecure-key-for-local-use-only")
else:
    SECRET_KEY = env.str("DJANGO_SECRET_KEY")
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"] if EMBEDDED else []
)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    # API tokens hashed at rest, with an expiry, one per log-in (annotation/accounts/tokens.py).
    "knox",
    "annotation.accounts",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "core",  # the outbox (core/models.py)
    "annotation",
    "training",
    "scoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "annotation.portal.languages.ParticipantLanguage",  # a participant's pages in their language
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "web.middleware.AsciiDigits",  # ids are ASCII digits: ١ in a path or query is refused
    "web.middleware.StyledRefusals",  # a bare 405 outside /api/ becomes a page in the site's style
]

ROOT_URLCONF = "web.urls"
WSGI_APPLICATION = "web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "web" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if DATABASE_URL:
    DATABASES = {"default": env.db_url("DATABASE_URL")}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            # Wait for a writer instead of failing with "database is locked".
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
# Persistent connections outside the embedded mode (a new PostgreSQL connection per
# request costs more than the request), checked before reuse.
DATABASES["default"].setdefault(
    "CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=0 if EMBEDDED else 60)
)
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A dead server fails fast instead of holding a request (or /healthz) for minutes.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT", default=5)
    )
    # The portal's hot queries (core/prepared.py) become server-side prepared statements
    # on their second run on a connection (PostgreSQL then skips parsing and planning);
    # other queries bind client-side as before. 0 turns it off (a pooler in transaction
    # mode without prepared-statement support).
    DATABASES["default"]["OPTIONS"].setdefault(
        "prepare_threshold", env.int("DATABASE_PREPARE_THRESHOLD", default=2) or None
    )
    # Those statements run on a generic plan, planned once per connection: with the default
    # ("auto") PostgreSQL plans a prepared statement again on each of its first five runs
    # and afterwards whenever the generic plan's estimate looks dearer, which on the
    # candidate and state queries it often does (docs/benchmarks.md). Only prepared
    # statements are affected; every other query is planned per run as before.
    DATABASES["default"]["OPTIONS"].setdefault(
        "options",
        "-c plan_cache_mode=" + env.str("DATABASE_PLAN_CACHE_MODE", default="force_generic_plan"),
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
# The languages a study may offer its participants: English (the source) and those with a
# complete catalogue under locale/ (issue 39; README, "Languages"). Staff pages are English.
LANGUAGES = [("en", "English"), ("nl", "Nederlands"), ("ar", "العربية")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Outside VAR_DIR in the image (collected at build time, served by whitenoise): the
# static files belong to the code, not to the data volume.
STATIC_ROOT = Path(env.str("STEREORANK_STATIC_ROOT", default=str(VAR_DIR / "static")))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env.str("STEREORANK_MEDIA_ROOT", default=str(VAR_DIR / "media")))
# Media and checkpoints: local folders (the default) or an S3-compatible object store
# (STEREORANK_STORAGE=s3, for a fleet of nodes that share no filesystem): see
# web/storage_settings.py for its settings.
STORAGE_KIND, STORAGES = storage_settings.storages(
    env,
    static_backend="django.contrib.staticfiles.storage.StaticFilesStorage"
    if DEBUG or EMBEDDED
    else "whitenoise.storage.CompressedManifestStaticFilesStorage",
)
# Embedded: WhiteNoise serves the apps' static folders as they are, DEBUG or not.
WHITENOISE_USE_FINDERS = DEBUG or EMBEDDED
# Item images on local disk are served by Django itself (no separate server), see
# web/urls.py; on the object store, by the store (signed URLs or its custom domain).
SERVE_MEDIA = env.bool("STEREORANK_SERVE_MEDIA", default=STORAGE_KIND == storage_settings.LOCAL)

LOGIN_URL = "portal:login"
LOGIN_REDIRECT_URL = "portal:home"
LOGOUT_REDIRECT_URL = "portal:login"

# Who may come in (annotation/accounts/). Lockout (django-axes), counted in the database
# so that it holds while Redis is down. Every password door (the portal's, the admin's,
# the token endpoint) refuses, until STEREORANK_LOCKOUT_MINUTES have passed since the last
# failure: an account from one address after STEREORANK_LOCKOUT_FAILURES failures (a
# guesser; the address's other accounts unaffected: a lab room or a NAT shares one), an
# account from every address after STEREORANK_LOCKOUT_ACCOUNT_FAILURES (a guesser with
# many addresses), an address after failures on STEREORANK_LOCKOUT_ADDRESS_ACCOUNTS
# distinct accounts (a spray). `manage.py unlock USERNAME` lifts it sooner.
INSTALLED_APPS.append("axes")
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked account or address
    "django.contrib.auth.backends.ModelBackend",
]
MIDDLEWARE.append("axes.middleware.AxesMiddleware")  # a lockout becomes its page (429)
AXES_HANDLER = "annotation.accounts.lockout.LabSafeHandler"
AXES_FAILURE_LIMIT = env.int("STEREORANK_LOCKOUT_FAILURES", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("STEREORANK_LOCKOUT_MINUTES", default=30))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # the pair; the rest is LabSafeHandler's
LOCKOUT_ACCOUNT_FAILURES = env.int("STEREORANK_LOCKOUT_ACCOUNT_FAILURES", default=50)
LOCKOUT_ADDRESS_ACCOUNTS = env.int("STEREORANK_LOCKOUT_ADDRESS_ACCOUNTS", default=20)
# The address the throttles read (REMOTE_ADDR, or X-Forwarded-For behind
# STEREORANK_NUM_PROXIES proxies): a forged header escapes neither.
AXES_CLIENT_IP_CALLABLE = "annotation.accounts.lockout.client_address"
AXES_LOCKOUT_CALLABLE = "annotation.accounts.lockout.lockout_response"
# Failures are kept (until their cool-off) to count them; successful log-ins are not
# logged: no participant's address is kept for nothing.
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False  # no banner on every start (commands' output stays theirs)
# API tokens (django-rest-knox's model, annotation/accounts/tokens.py): a new one per
# log-in, only its digest stored, valid STEREORANK_TOKEN_TTL_HOURS; never extended by
# use (no write on the API's hot path).
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=env.int("STEREORANK_TOKEN_TTL_HOURS", default=10)),
    "AUTO_REFRESH": False,
}
# The second factor (django-otp; annotation/accounts/second_factor.py): accounts that need
# one (annotation/accounts/policy.py: staff and superusers) enrol an authenticator app
# (TOTP) with recovery codes; until a session has given a code, it reaches only the pages
# to give one (annotation/accounts/middleware.py), and the token endpoint wants one too.
INSTALLED_APPS += [
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
]
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
    "django_otp.middleware.OTPMiddleware",
)
MIDDLEWARE.insert(
    MIDDLEWARE.index("django_otp.middleware.OTPMiddleware") + 1,
    "annotation.accounts.middleware.SecondFactorRequired",
)
OTP_TOTP_ISSUER = "stereorank"  # the name the authenticator app shows

# HTTPS outside the embedded mode (`manage.py check --deploy` is clean with the defaults);
# the embedded mode serves plain http on 127.0.0.1.
# DJANGO_HTTPS: the site is reached over HTTPS (secure cookies, HSTS, redirect); off only
# for a plain-HTTP trial on localhost. Behind a TLS-terminating proxy, set
# DJANGO_SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto (only when the proxy overwrites that
# header: a client could send it otherwise), or the redirect loops.
HTTPS = env.bool("DJANGO_HTTPS", default=not DEBUG and not EMBEDDED)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=HTTPS)
# Probes (compose, load balancers) reach /healthz over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
_proxy_header = env.str("DJANGO_SECURE_PROXY_SSL_HEADER", default="")
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=HTTPS)
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=60 * 60 * 24 * 365 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_HSTS_PRELOAD", default=True)
SECURE_CONTENT_TYPE_NOSNIFF = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # `Authorization: Token <key>`: a hashed knox token, found with its user and the
        # annotator profile in one query.
        "annotation.api.auth.ProfileTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    # The API speaks JSON (form encodings cannot send null or lists); the log-in view
    # (annotation/api/tokens.py) keeps its own parsers, forms included. Hostile JSON (too
    # deep, NaN, a key twice, too big) is a 400 or 413, parsed before any handler runs
    # (core.api_bodies.ParsedFirst, every API view's first base).
    "DEFAULT_PARSER_CLASSES": ["core.api_bodies.StrictJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "web.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 100,
    # `?format=` selects an export's format, not a DRF renderer.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_THROTTLE_RATES": {
        "auth": env.str("STEREORANK_THROTTLE_AUTH", default="30/min"),
        "submit": env.str("STEREORANK_THROTTLE_SUBMIT", default="120/min"),
        # New participants created by a study's entry link, per client IP.
        "join": env.str("STEREORANK_THROTTLE_JOIN", default="20/hour"),
        # /api/score/ and /api/optimise/, per user (scoring role)
        "scoring": env.str("STEREORANK_THROTTLE_SCORING", default="300/min"),
    },
    # Proxies in front of the app: the client IP throttles read is the one they add to
    # X-Forwarded-For. 0 (the default) reads REMOTE_ADDR and ignores the header, which a
    # client could otherwise forge to escape every throttle.
    "NUM_PROXIES": env.int("STEREORANK_NUM_PROXIES", default=0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "stereorank API",
    "DESCRIPTION": "Ranking tasks, rankings, exports and the reward-model registry.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components: read-only fields out, non-blank strings
    # with minLength 1.
    "COMPONENT_SPLIT_REQUEST": True,
    # One name for the annotator status wherever a field carries it.
    "ENUM_NAME_OVERRIDES": {
        "AnnotatorStatusEnum": "annotation.models.AnnotatorStatus",
        "StudyStatusEnum": "annotation.models.studies.Study.Status",
        "StudyKindEnum": "annotation.models.studies.Study.Kind",
    },
    # Swagger UI and Redoc from the drf-spectacular-sidecar package: /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "web.openapi.document_error_responses",
    ],
}

# Throttle counters: Redis when there is one, else local memory. "health" holds the
# workers' and beat's heartbeats (web/heartbeat.py), so it is shared between processes:
# Redis, else files under VAR_DIR.
REDIS_URL = env.str("REDIS_URL", default="")
CACHES = {
    # Short timeouts: with Redis down a request waits a second at most, then the
    # throttles fail open (core.throttling) rather than hang.
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "health": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "stereorank-health",
        # /healthz answers within seconds even when Redis does not.
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
    }
    if REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": VAR_DIR / "health",
    },
}
# Heartbeats: written every HEARTBEAT_SECONDS by each worker and beat; one older than
# STALE_AFTER counts as down. REQUIRED: what /healthz needs for a 200.
HEALTH = {
    "HEARTBEAT_SECONDS": env.int("STEREORANK_HEARTBEAT_SECONDS", default=15),
    "STALE_AFTER": env.int("STEREORANK_HEARTBEAT_STALE_AFTER", default=60),
    "REQUIRED": env.list(
        "STEREORANK_HEALTH_REQUIRED", default=["database", "broker", "worker:default", "worker:gpu"]
    ),
    # Also touched on every beat, for a container's own health check (compose).
    "HEARTBEAT_FILE": env.str("STEREORANK_HEARTBEAT_FILE", default=""),
}

# Celery: Redis in production, a filesystem broker in the embedded mode.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
CELERY_RESULT_BACKEND = env.str(
    "CELERY_RESULT_BACKEND",
    default=REDIS_URL or f"file://{(VAR_DIR / 'celery' / 'results').as_posix()}",
)
if CELERY_BROKER_URL.startswith("filesystem"):
    for folder in ("queue", "processed", "results", "control"):
        (VAR_DIR / "celery" / folder).mkdir(parents=True, exist_ok=True)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(VAR_DIR / "celery" / "queue"),
        "data_folder_out": str(VAR_DIR / "celery" / "queue"),
        "processed_folder": str(VAR_DIR / "celery" / "processed"),
        # Broadcast exchanges (the remote-control "pidbox"); kombu's default is ./control.
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {
        # Longer than the longest training run, so a long task is not re-delivered
        # to a second worker while the first is still on it.
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=6 * 60 * 60),
    }
)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# Training runs (training/runs/services.py): the soft limit is checked between steps (the gpu
# worker runs -P solo, where Celery's own limits do not apply); a run whose heartbeat
# is older than STALE_AFTER is taken as lost (the backstop); a lost run is retried up to
# MAX_ATTEMPTS.
TRAINING_RUNS = {
    "SOFT_TIME_LIMIT": env.int("STEREORANK_RUN_SOFT_TIME_LIMIT", default=5 * 60 * 60),
    "STALE_AFTER": env.int("STEREORANK_RUN_STALE_AFTER", default=30 * 60),
    "MAX_ATTEMPTS": env.int("STEREORANK_RUN_MAX_ATTEMPTS", default=2),
    # A run's holder is lost once its own heartbeat was seen missing this long (four beats),
    # by the sweep beat runs every SWEEP_EVERY seconds (training/runs/recovery.py).
    "WORKER_LOST_AFTER": env.int("STEREORANK_WORKER_LOST_AFTER", default=60),
    "SWEEP_EVERY": env.int("STEREORANK_RUN_SWEEP_EVERY", default=10),
}
# Prefork pools (the default queue): Celery's own limits, soft first.
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=2 * 60 * 60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=2 * 60 * 60 + 300)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# The annotation study.
STEREORANK = {
    "TASK_SIZE": env.int("STEREORANK_TASK_SIZE", default=6),
    "TASK_OVERLAP": env.int("STEREORANK_TASK_OVERLAP", default=1),
    "ANNOTATOR_QUOTA": env.int("STEREORANK_ANNOTATOR_QUOTA", default=20),
    "RESERVATION": timedelta(minutes=env.int("STEREORANK_RESERVATION_MINUTES", default=30)),
    # Secret that turns user ids into stable pseudonyms in exports.
    "PSEUDONYM_KEY": env.str("STEREORANK_PSEUDONYM_KEY", default=SECRET_KEY),
    # Secret of the keyed hash that is all we keep of a crowd platform's participant id.
    "EXTERNAL_ID_KEY": env.str("STEREORANK_EXTERNAL_ID_KEY", default=SECRET_KEY),
    # Scheme and host participants reach, for the entry links shown in the admin
    # (e.g. https://study.example.org); blank: the host the admin page was asked on.
    "SITE_URL": env.str("STEREORANK_SITE_URL", default=""),
    # A study's life on Prolific (annotation/crowd/): the API token (never logged, never
    # shown), the API's host root (the client appends /api/v1/...), the webhooks' secret.
    "PROLIFIC": {
        "TOKEN": env.str("STEREORANK_PROLIFIC_TOKEN", default=""),
        "API_URL": env.str("STEREORANK_PROLIFIC_API_URL", default="https://api.prolific.com"),
        "WEBHOOK_SECRET": env.str("STEREORANK_PROLIFIC_WEBHOOK_SECRET", default=""),
        "TIMEOUT": 20.0,
        "BACKOFF_S": 1.0,
    },
    # Quality (annotation/stats/). The agreement subset: this fraction of the tasks
    # build_tasks makes is ranked by AGREEMENT_OVERLAP annotators, the rest by TASK_OVERLAP.
    "AGREEMENT_FRACTION": env.float("STEREORANK_AGREEMENT_FRACTION", default=0.2),
    "AGREEMENT_OVERLAP": env.int("STEREORANK_AGREEMENT_OVERLAP", default=3),
    # Share of each annotator's tasks that are gold tasks (when there are gold tasks).
    "GOLD_RATE": env.float("STEREORANK_GOLD_RATE", default=0.15),
    # Shares of each annotator's tasks paced like gold from the first rankings, whatever
    # the sampler: attention-check tasks, and rankings of the agreement subset (sets
    # already started first), so a study stopped early still measures agreement.
    "CHECK_RATE": env.float("STEREORANK_CHECK_RATE", default=0.2),
    "AGREEMENT_RATE": env.float("STEREORANK_AGREEMENT_RATE", default=0.2),
    # Adaptive overlap (annotation/assignment/overlap.py): a full task of 2+ rankings whose
    # Kendall's W is below CUT gets one more annotator, up to CAP rankings (CAP 0: off).
    "ADAPTIVE_OVERLAP": {
        "CUT": env.float("STEREORANK_OVERLAP_CUT", default=0.5),
        "CAP": env.int("STEREORANK_OVERLAP_CAP", default=5),
    },
    # The active sampler (training/registry/sampling.py): an active study's priorities are computed
    # again every EVERY rankings (and after each new or promoted version); BATCH greedy
    # D-optimal picks, EXPLORATION of them among the least-ranked occupations; PRIOR: the
    # head weights' prior precision in the Laplace approximation.
    "SAMPLER": {
        "EVERY": env.int("STEREORANK_SAMPLER_EVERY", default=50),
        "BATCH": env.int("STEREORANK_SAMPLER_BATCH", default=100),
        "EXPLORATION": env.float("STEREORANK_SAMPLER_EXPLORATION", default=0.2),
        "PRIOR": env.float("STEREORANK_SAMPLER_PRIOR", default=1.0),
    },
    # Demographic groups with fewer annotators are not reported.
    "GROUP_K": env.int("STEREORANK_GROUP_K", default=5),
    # Demographic fields that are special categories of personal data (GDPR Art. 9): no
    # group heads are trained on them (training/runs/group_heads.py).
    # Every promotion first checks that no group of k or more loses more than this much
    # alignment against the active version (training/perspectives/group_check.py).
    "PROMOTION_GROUP_CHECK": env.bool("STEREORANK_PROMOTION_GROUP_CHECK", default=True),
    "PROMOTION_GROUP_MARGIN": env.float("STEREORANK_PROMOTION_GROUP_MARGIN", default=0.02),
    "SPECIAL_CATEGORY_FIELDS": env.list(
        "STEREORANK_SPECIAL_CATEGORY_FIELDS", default=["religion_or_belief"]
    ),
    # Overrides of annotation.stats.policy.Policy, whose defaults are documented there,
    # e.g. STEREORANK_QUALITY_POLICY='{"gold_min_score": 0.2}'.
    "QUALITY_POLICY": env.json("STEREORANK_QUALITY_POLICY", default={}),
    # How snapshot labels average rankings: "none" (a plain mean) or "reliability" (each
    # annotator weighted by agreement with the others: annotation/stats/weights.py),
    # estimated for annotators who share at least RELIABILITY_MIN_TASKS tasks.
    "LABEL_WEIGHTING": env.str("STEREORANK_LABEL_WEIGHTING", default="none"),
    "RELIABILITY_MIN_TASKS": env.int("STEREORANK_RELIABILITY_MIN_TASKS", default=3),
    # Bootstrap draws of the quality report's intervals.
    "QUALITY_N_BOOT": env.int("STEREORANK_QUALITY_N_BOOT", default=1000),
    # The scoring API, the optimiser and the prompt checker (scoring/).
    "SCORING": {
        "MAX_PROMPTS": env.int("STEREORANK_SCORING_MAX_PROMPTS", default=256),
        "MAX_CHARS": env.int("STEREORANK_SCORING_MAX_CHARS", default=1000),
        # Versions a process keeps loaded (the active one and recently asked-for others).
        "VERSIONS_LOADED": env.int("STEREORANK_SCORING_VERSIONS_LOADED", default=2),
        # Web processes score on the CPU unless told otherwise (the GPU is the trainer's).
        "DEVICE": env.str("STEREORANK_SCORING_DEVICE", default="cpu"),
        # The encoder versions are served by: torch/none (fp32, as trained) or a copy,
        # onnx or openvino with none or int8, served only once it passed the accuracy gate
        # for the version (manage.py encoder_gate); without one the version is refused,
        # unless UNGATED is "fp32" (staff's choice: serve it by fp32). scoring/serving.py.
        "ENCODER_BACKEND": env.str("STEREORANK_SCORING_ENCODER_BACKEND", default="torch"),
        "ENCODER_QUANTIZATION": env.str("STEREORANK_SCORING_ENCODER_QUANTIZATION", default="none"),
        "UNGATED": env.str("STEREORANK_SCORING_UNGATED", default="refuse"),
        # The optimiser: "offline" (rules) or "openai" (TRAINING["OPENAI_*"] settings).
        "REWRITER": env.str("STEREORANK_REWRITER", default="offline"),
        "OPTIMISE_MAX_N": env.int("STEREORANK_OPTIMISE_MAX_N", default=10),
        "OPTIMISE_ROUNDS": env.int("STEREORANK_OPTIMISE_ROUNDS", default=3),
        "OPTIMISE_PER_ROUND": env.int("STEREORANK_OPTIMISE_PER_ROUND", default=8),
    },
}

# The reward model side.
TRAINING = {
    "MODEL_DIR": Path(env.str("STEREORANK_MODEL_DIR", default=str(VAR_DIR / "models"))),
    "EMBEDDING_CACHE": Path(
        env.str("STEREORANK_EMBEDDING_CACHE", default=str(VAR_DIR / "embeddings"))
    ),
    # A per-node cache: vectors one process keeps in memory (an LRU in front of the
    # memory-mapped shards), and the shards a folder holds before a write merges the
    # small ones (manage.py compact_embeddings merges all). training/ml/cache.py.
    "EMBEDDING_CACHE_ENTRIES": env.int("STEREORANK_EMBEDDING_CACHE_ENTRIES", default=20_000),
    "EMBEDDING_CACHE_MAX_SHARDS": env.int("STEREORANK_EMBEDDING_CACHE_MAX_SHARDS", default=16),
    "CHECKPOINT_DIR": Path(
        env.str("STEREORANK_CHECKPOINT_DIR", default=str(VAR_DIR / "checkpoints"))
    ),
    "DEFAULT_ENCODER": env.str(
        "STEREORANK_ENCODER", default="sentence-transformers/all-mpnet-base-v2"
    ),
    "DEVICE": env.str("STEREORANK_DEVICE", default="auto"),
    # Fetch an encoder from the Hugging Face hub when it is nowhere on disk (off: offline).
    "ALLOW_HUB": env.bool("STEREORANK_ALLOW_HUB", default=False),
    "PARAPHRASE_BACKEND": env.str("STEREORANK_PARAPHRASE_BACKEND", default="offline"),
    "OPENAI_BASE_URL": env.str("OPENAI_BASE_URL", default="https://api.openai.com/v1"),
    "OPENAI_API_KEY": env.str("OPENAI_API_KEY", default=""),
    "OPENAI_MODEL": env.str("OPENAI_MODEL", default="gpt-4o"),
    # A validation study's image generator (training/image_generation.py); no URL: none.
    "IMAGES_BASE_URL": env.str("STEREORANK_IMAGES_BASE_URL", default=""),
    "IMAGES_API_KEY": env.str("STEREORANK_IMAGES_API_KEY", default=""),
    "IMAGES_MODEL": env.str("STEREORANK_IMAGES_MODEL", default="gpt-image-1"),
    "IMAGES_SIZE": env.str("STEREORANK_IMAGES_SIZE", default="1024x1024"),
    # Passed to training.ml.paraphrase.openai_compat.OpenAIBackend; None = no limit/price.
    "OPENAI_CLIENT": {
        "timeout": env.float("OPENAI_TIMEOUT", default=60.0),
        "max_retries": env.int("OPENAI_MAX_RETRIES", default=4),
        "batch_size": env.int("OPENAI_BATCH_SIZE", default=8),
        "requests_per_minute": env.int("OPENAI_REQUESTS_PER_MINUTE", default=None),
        "price_prompt_per_1k": env.float("OPENAI_PRICE_PROMPT_PER_1K", default=None),
        "price_completion_per_1k": env.float("OPENAI_PRICE_COMPLETION_PER_1K", default=None),
        # The cap per UTC day, across requests and processes (training/llm_budget.py keeps
        # the day's spending in the database), and so also any one request's or run's.
        "max_cost_usd": env.float("OPENAI_MAX_COST_USD", default=None),
    },
    # Quantized encoders (pip install 'stereorank[quant]'; docs/reward-model.md): the
    # accuracy gate refuses a copy whose scores drift more than this from fp32 ...
    "QUANT_MAX_RHO_DRIFT": env.float("STEREORANK_QUANT_MAX_RHO_DRIFT", default=0.01),
    "QUANT_MAX_FLIP_SHARE": env.float("STEREORANK_QUANT_MAX_FLIP_SHARE", default=0.02),
    # ... and the augmentation's cosine filter may run on one: torch/none, onnx/int8, ...
    "AUGMENT_ENCODER_BACKEND": env.str("STEREORANK_AUGMENT_ENCODER_BACKEND", default="torch"),
    "AUGMENT_ENCODER_QUANTIZATION": env.str(
        "STEREORANK_AUGMENT_ENCODER_QUANTIZATION", default="none"
    ),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# ---- Issue 31, parts 6-8: safe uploads, the Content-Security-Policy, bounded requests ----
# Item images: at most this many pixels (width x height), checked on the header before a
# pixel is decoded (annotation/catalogue/images.py): 40 MP is a 6,300 px square, far above
# what generators make (1024 px), far below what fills a worker's memory.
STEREORANK["MAX_IMAGE_PIXELS"] = env.int("STEREORANK_MAX_IMAGE_PIXELS", default=40_000_000)
# Whether STEREORANK_PSEUDONYM_KEY is set: without it the pseudonyms hang on SECRET_KEY
# (today's derivation, kept so existing pseudonyms do not change) and `check --deploy`
# warns (annotation/rankings/checks.py).
STEREORANK["PSEUDONYM_KEY_GIVEN"] = bool(env.str("STEREORANK_PSEUDONYM_KEY", default=""))
# The Content-Security-Policy on every response (django-csp; web/csp_settings.py says
# what it allows and why). "csp" in INSTALLED_APPS for its settings checks.
INSTALLED_APPS.append("csp")
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
    "csp.middleware.CSPMiddleware",
)
CONTENT_SECURITY_POLICY = csp_settings.policy(env, STORAGES)
# The OpenAPI schema and its Swagger UI are for staff (they map every door of the API).
SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"] = ["rest_framework.permissions.IsAdminUser"]
# The dashboards' own script (web/ is not an app: its static folder is named here).
STATICFILES_DIRS = [BASE_DIR / "web" / "static"]

# ---- Issue 30: who may see what (annotation/access/) ----
# Per-study roles and the demographics permission: memberships and the access log are
# the access app's; its backend answers user.has_perm(capability, study) (after the
# backends above, which grant nothing per object).
INSTALLED_APPS.append("annotation.access")
# A study's crowd-platform records and the payment ledger (annotation/crowd/).
INSTALLED_APPS.append("annotation.crowd")
AUTHENTICATION_BACKENDS.append("annotation.access.backend.StudyRoleBackend")

# ---- Issue 30, part 5: erasure that erases; log lines that name nobody ----
# Log lines carry pseudonyms, never usernames, crowd ids or addresses: request lines lose
# their query strings (an entry link carries the platform's participant id there), on the
# development server's logger and on the console (core/log_filters.py); django-axes names
# the account by pseudonym and the address by a keyed hash
# (annotation/participants/log_names.py).
LOGGING["filters"] = {
    "no_query_strings": {"()": "core.log_filters.NoQueryStrings"},
    # A refused request (4xx) is one line, not a traceback (issue 37).
    "refusals_without_traceback": {"()": "core.log_filters.RefusalsWithoutTraceback"},
}
LOGGING["formatters"] = {
    "server": {
        "()": "django.utils.log.ServerFormatter",
        "format": "[{server_time}] {message}",
        "style": "{",
    }
}
LOGGING["handlers"]["console"]["filters"] = ["no_query_strings"]
LOGGING["handlers"]["server"] = {"class": "logging.StreamHandler", "formatter": "server"}
LOGGING["loggers"] = {
    "django.server": {
        "handlers": ["server"],
        "level": "INFO",
        "propagate": False,
        "filters": ["no_query_strings"],
    },
    "django.request": {"filters": ["refusals_without_traceback"]},
    # httpx logs each request's URL at INFO; a crowd platform's URL holds a submission id
    # (the participant's session id): warnings and errors only.
    "httpx": {"level": "WARNING"},
}
AXES_CLIENT_STR_CALLABLE = "annotation.participants.log_names.axes_client"

# ---- Issue 42, part 3: rankings imported from Label Studio, Argilla or Potato ----
# Sources with the owner's basis, batches by file hash, imported annotators under a keyed
# hash of their source id: the imports app's (annotation/imports/), migrations of its own.
INSTALLED_APPS.append("annotation.imports")
