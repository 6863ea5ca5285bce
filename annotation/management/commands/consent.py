import json
from pathlib import Path

from django.core.management.base import CommandError

from annotation.management.commands._content import add_study_and_language, write_lacking
from annotation.participants import consent, content
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Show a study's consent text field by field, with what it still lacks; or publish a "
        "new version from a JSON file of fields (the rest carried over), or fill what it "
        "lacks with the catalogue's demonstration values (bin/run's demo study)."
    )

    def add_arguments(self, parser):
        add_study_and_language(parser)
        source = parser.add_mutually_exclusive_group()
        source.add_argument(
            "--file",
            type=Path,
            help=f"a JSON object with any of: {', '.join((*consent.FIELDS, *consent.RELEASE))} "
            "(the release fields: true/false, a list of demographic field keys, true/false)",
        )
        source.add_argument(
            "--demo",
            action="store_true",
            help="fill only the fields the text lacks with made-up values marked as a "
            "demonstration (never for a real study)",
        )

    def handle(self, *args, study, language, file, demo, **options):
        study = studies.resolve(study)
        language = consent.check_offered(study, language)
        if file is not None:
            text, created = consent.publish(study, self._read(file), language=language)
        elif demo:
            values = consent.demonstration_values()
            text, created = consent.publish(study, values, language=language, fill_only=True)
        else:
            text, created = content.consent_text(study, language), False
            if text.language != language:
                raise CommandError(
                    f"study {study.slug} has no consent text in {language} yet: publish one "
                    f"with --language {language} --file FILE"
                )
        self._show(study, text, created)

    def _read(self, path: Path) -> dict:
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CommandError(f"{path}: {error}") from None
        if not isinstance(values, dict):
            raise CommandError(f"{path}: expected a JSON object of consent fields")
        return values

    def _show(self, study, text, created: bool) -> None:
        state = "published" if created else "unchanged"
        demo = " (demonstration values)" if text.demonstration else ""
        self.stdout.write(
            f"study {study.slug}: consent version {text.version} ({text.language}), {state}{demo}"
        )
        for name in consent.FIELDS:
            if name != "text":
                value = getattr(text, name)
                if name == "legal_basis":
                    value = text.get_legal_basis_display()
                self.stdout.write(f"  {consent.LABELS[name]}: {value or '(missing)'}")
        release = [
            f"rankings {'yes' if text.release_rankings else 'no'}",
            f"answers {', '.join(text.release_demographics) or 'none'}",
            f"own words {'yes' if text.release_free_text else 'no'}",
        ]
        self.stdout.write(f"  a public release may hold: {'; '.join(release)}")
        missing = consent.missing_fields(text)
        if missing:
            self.stdout.write(f"  missing: {', '.join(consent.LABELS[n] for n in missing)}")
        else:
            self.stdout.write(f"  complete in {text.language}")
        write_lacking(self.stdout, study)
