"""The imports app's config: the models of ``annotation.imports`` (sources with their basis,
batches, imported annotators) with migrations of their own; an erasure blanks the erased
person's source id hash (``services.forget_source_id``, on ``annotator_erased``)."""

from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "annotation.imports"
    label = "imports"
    verbose_name = "Imports"

    def ready(self) -> None:
        from annotation.imports.services import forget_source_id
        from annotation.participants.erasure import annotator_erased

        annotator_erased.connect(forget_source_id, dispatch_uid="annotation.imports.forget")
