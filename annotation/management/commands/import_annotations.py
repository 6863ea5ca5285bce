"""``manage.py import_annotations FILE --from label-studio|argilla|potato --study SLUG
--source NAME --owner USERNAME [--basis TEXT] [--question NAME]``, and without FILE:
``--basis TEXT`` records a source's basis, ``--withdraw-basis`` withdraws it
(``annotation.imports.services``)."""

from pathlib import Path

from django.core.management.base import CommandError

from annotation.imports import services
from annotation.imports.models import ImportSource
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Import rankings from a Label Studio, Argilla or Potato export into a study, as "
        "tiers, under pseudonymous profiles that cannot log in. They count only once an "
        "owner of the study records the basis (--basis: that the source study's consent "
        "covers this use). The same file again adds nothing; a malformed record is named "
        "and nothing of the file is written."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", nargs="?", help="the export (JSON array or JSON Lines)")
        parser.add_argument(
            "--from", dest="tool", required=True, choices=[t.value for t in ImportSource.Tool]
        )
        parser.add_argument("--study", required=True, metavar="SLUG")
        parser.add_argument(
            "--source", required=True, help="the source study, named (e.g. its project's name)"
        )
        parser.add_argument(
            "--owner", required=True, metavar="USERNAME", help="an owner of the study"
        )
        parser.add_argument(
            "--basis",
            default="",
            metavar="TEXT",
            help="the owner's statement that the source study's consent covers this use",
        )
        parser.add_argument(
            "--withdraw-basis",
            action="store_true",
            help="withdraw the source's basis: its rankings stop counting",
        )
        parser.add_argument(
            "--question",
            metavar="NAME",
            help="the ranking question (control tag, question or scheme name) when a record "
            "answers several",
        )

    def handle(self, *args, file, tool, study, source, owner, basis, withdraw_basis, **options):
        found = studies.resolve(study)
        if withdraw_basis:
            if file or basis:
                raise CommandError("--withdraw-basis takes no FILE and no --basis")
            withdrawn = services.withdraw_basis(found, tool, source, owner)
            self.stdout.write(
                f"Withdrew the basis for {withdrawn} in {found.slug} on "
                f"{withdrawn.basis_withdrawn_at:%Y-%m-%d}: its rankings no longer count."
            )
            return
        if not file:
            if not basis:
                raise CommandError("give FILE to import, or --basis or --withdraw-basis")
            self.stdout.write(self._basis(services.record_basis(found, tool, source, basis, owner)))
            return
        path = Path(file)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}") from error
        report = services.import_file(
            found,
            tool,
            data,
            file_name=path.name,
            source=source,
            by=owner,
            basis=basis,
            question=options["question"],
        )
        batch = report.batch
        if report.new:
            self.stdout.write(
                f"Imported {path.name} into {found.slug}: {report.rankings} rankings by "
                f"{report.annotators} new annotators, {report.tasks} new tasks, "
                f"{report.skipped} answers skipped."
            )
        else:
            self.stdout.write(
                f"{path.name} was imported into {found.slug} already, on "
                f"{batch.imported_at:%Y-%m-%d}: nothing added."
            )
        batch.source.refresh_from_db()
        self.stdout.write(self._basis(batch.source))

    @staticmethod
    def _basis(source: ImportSource) -> str:
        if source.basis_withdrawn_at is not None:
            return f"The basis for {source} was withdrawn: its rankings do not count."
        if source.basis_recorded_at is None:
            return (
                f"No basis recorded for {source}: its rankings do not count until an owner "
                "records one (--basis)."
            )
        by = source.basis_by.get_username() if source.basis_by else "an owner"
        return (
            f"Basis for {source} recorded by {by} on {source.basis_recorded_at:%Y-%m-%d}: "
            "its rankings count."
        )
