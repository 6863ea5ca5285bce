from pathlib import Path

from django.core.management.base import CommandError

from annotation.participants import consent, content
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Show a study's instructions in one of its languages; or publish a new version in "
        "that language from a text file (plain text, a blank line starts a new paragraph)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument(
            "--language",
            metavar="CODE",
            help="the language of the text (one of the study's; default: its first)",
        )
        parser.add_argument("--file", type=Path, help="a UTF-8 text file of the instructions")

    def handle(self, *args, study, language, file, **options):
        study = studies.resolve(study)
        language = consent.check_offered(study, language)
        if file is not None:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, ValueError) as error:
                raise CommandError(f"{file}: {error}") from None
            shown, created = content.publish_instructions(study, language, text)
        else:
            shown, created = content.instructions(study, language), False
            if shown.language != language:
                raise CommandError(
                    f"study {study.slug} has no instructions in {language} yet: publish them "
                    f"with --language {language} --file FILE"
                )
        state = "published" if created else "unchanged"
        self.stdout.write(
            f"study {study.slug}: instructions version {shown.version} ({shown.language}), "
            f"{state}, {len(shown.text.split())} words"
        )
        lines = content.lacking(study)
        for line in lines:
            self.stdout.write(f"  before the study opens: {line}")
        if not lines:
            self.stdout.write("  the study can open: each of its languages has its content")
