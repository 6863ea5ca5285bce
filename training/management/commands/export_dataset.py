from pathlib import Path

from core.commands import ServiceCommand
from training.releases.services import export_dataset


class Command(ServiceCommand):
    help = (
        "Release STUDY's rankings in snapshot N as a Hugging Face dataset in DIR (parquet "
        "configs rankings, items, labels and pairs, split as the snapshot splits them, and a "
        "dataset card): only annotators whose consent allows a public release, their answers "
        "in combinations k or more share, pseudonyms made for this release. Needs the "
        "release extra (pip install 'stereorank[release]')."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", metavar="STUDY", help="the study's slug")
        parser.add_argument("--snapshot", type=int, required=True, metavar="N")
        parser.add_argument(
            "--license", required=True, metavar="L", help="the Hub's licence id, e.g. cc-by-4.0"
        )
        parser.add_argument("--out", type=Path, required=True, metavar="DIR")
        parser.add_argument(
            "--push",
            metavar="REPO",
            help="then push DIR to this new Hub dataset repository (OWNER/NAME; the token "
            "is HF_TOKEN), private unless --public",
        )
        parser.add_argument(
            "--public", action="store_true", help="with --push: make the repository public"
        )

    def handle(self, *args, study, snapshot, license, out, push, public, **options):
        if public and not push:
            self.stderr.write("--public applies to --push only: nothing was pushed")
        release = export_dataset(study, snapshot, license, out, repo=push, public=public)
        self.stdout.write(f"release of {study}, snapshot {snapshot}: {release.folder}")
        for config, splits in release.rows.items():
            counts = ", ".join(f"{split} {n}" for split, n in splits.items())
            self.stdout.write(f"  {config}: {counts}")
        self.stdout.write(
            f"  annotators: {release.annotators} of {release.counted} whose rankings count "
            "(the others' consent does not allow a public release)"
        )
        self.stdout.write(
            f"  answers released: {', '.join(release.columns) or 'none'}"
            + (f"; dropped for k: {', '.join(release.dropped)}" if release.dropped else "")
            + (
                f"; rows with all answers dropped: {release.suppressed}"
                if release.suppressed
                else ""
            )
        )
        if release.url:
            visibility = "public" if public else "private"
            self.stdout.write(f"  pushed to {release.url} ({visibility})")
