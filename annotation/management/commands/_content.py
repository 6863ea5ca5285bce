"""What the commands that publish a study's content per language share (``consent``,
``instructions``): their study and language arguments, and what the study still lacks."""

from __future__ import annotations

from annotation.participants import content


def add_study_and_language(parser) -> None:
    parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
    parser.add_argument(
        "--language",
        metavar="CODE",
        help="the language of the text (one of the study's; default: its first)",
    )


def write_lacking(stdout, study) -> None:
    """One line for each language that still lacks its content, or that the study can open."""
    lines = content.lacking(study)
    for line in lines:
        stdout.write(f"  before the study opens: {line}")
    if not lines:
        stdout.write("  the study can open: each of its languages has its content")
