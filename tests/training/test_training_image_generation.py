"""The optional image generator of a validation study (issue 17): none by default; against
a local OpenAI-compatible images server, each (prompt, seed) of the manifest generated once
and imported with its checksum and the generator's settings; a failing server refuses the
whole batch in one line."""

import hashlib
import io

import pytest
from django.core.management import CommandError, call_command

from annotation.models.validation import ConditionImage
from tests.ml.openai_test_server import ChatServer, Reply, fake_image
from tests.validation_helpers import make_validation_study
from training import tasks


@pytest.fixture
def study(db, media_root, tmp_path):
    return make_validation_study(tmp_path, occupations=2, placeholders=False)


@pytest.fixture
def server(settings):
    with ChatServer() as running:
        settings.TRAINING = {
            **settings.TRAINING,
            "IMAGES_BASE_URL": running.base_url,
            "IMAGES_API_KEY": "sk-test",
            "IMAGES_MODEL": "test-images",
            "IMAGES_SIZE": "256x256",
        }
        yield running


def test_no_generator_by_default(study):
    with pytest.raises(CommandError, match="no image generator: set STEREORANK_IMAGES_BASE_URL"):
        call_command("generate_images", "val", "--now")
    with pytest.raises(CommandError, match="no image generator"):
        call_command("generate_images", "val")


def test_images_come_from_the_endpoint_with_checksums_and_settings(study, server):
    out = io.StringIO()
    call_command("generate_images", "val", "--images-per-prompt", "2", "--now", stdout=out)
    assert out.getvalue().startswith("8 images generated")
    sent = [s.body for s in server.seen if s.path == "/v1/images/generations"]
    assert len(sent) == 8 and all(b["response_format"] == "b64_json" for b in sent)
    for image in ConditionImage.objects.select_related("item", "prompt"):
        body = {"prompt": image.prompt.text, "seed": image.seed}
        assert body in [{"prompt": b["prompt"], "seed": b["seed"]} for b in sent]
        data = fake_image(body)
        assert image.item.image_sha256 == hashlib.sha256(data).hexdigest()
        assert image.item.generator == {
            "name": "openai-compatible",
            "model": "test-images",
            "size": "256x256",
            "base_url": server.base_url,
        }
    # the task (default queue) skips what is there
    assert tasks.generate_images.apply(args=[study.pk, 2]).get() == {"created": 0, "skipped": 8}
    assert len([s for s in server.seen if s.path == "/v1/images/generations"]) == 8


def test_a_failing_endpoint_imports_nothing(study, server):
    server.script.extend([Reply(), Reply(status=400)])
    with pytest.raises(CommandError) as caught:
        call_command("generate_images", "val", "--now")
    assert "HTTP 400: scripted HTTP 400" in str(caught.value) and "\n" not in str(caught.value)
    assert not ConditionImage.objects.exists()
