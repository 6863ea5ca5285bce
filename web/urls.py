from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.crowd import hooks as crowd_hooks
from web.media import serve_media
from web.views import ApiRootView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("dashboards/", include("web.dashboards.urls")),
    path("api/training/", include("training.api.urls")),
    path("api/", ApiRootView.as_view(), name="api-root"),
    path("", include("scoring.urls")),
    path("api/", include("annotation.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Staff only (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]); the split view serves the
    # Swagger UI's set-up script as a file of its own (no inline script: the CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("", include("web.health")),  # /healthz
    path("hooks/prolific/", crowd_hooks.prolific, name="hooks-prolific"),
    path("", include("annotation.portal.urls")),
]

if settings.SERVE_MEDIA:
    # Item images live on local disk (or a shared volume); Django serves them so
    # the platform needs no separate file server. Images only, never sniffed (web/media.py).
    urlpatterns += [
        re_path(r"^media/(?P<path>.*)$", serve_media, {"document_root": settings.MEDIA_ROOT}),
    ]

# Plain pages (JSON under /api/): no route listing, no traceback, whatever DEBUG says.
handler403 = "web.views.forbidden"
handler404 = "web.views.not_found"
handler500 = "web.views.server_error"
