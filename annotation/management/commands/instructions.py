from pathlib import Path

from django.core.management.base import CommandError

from annotation.management.commands._content import add_study_and_language, write_lacking
from annotation.participants import consent, content
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Show a study's instructions in one of its languages; or publish a new version in "
        "that language from a text file (plain text, a blank line starts a new paragraph)."
    )

    def add_arguments(self, parser):
        add_study_and_language(parser)
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
        write_lacking(self.stdout, study)
