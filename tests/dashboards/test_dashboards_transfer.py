"""Import a seed .pth and export a version (seed .pth and native zip) from the registry page."""

import io
import zipfile

import pytest
import torch
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from training_study import ENCODER

from training.ml.checkpoints import Checkpoint as Files
from training.ml.checkpoints import export_seed_pth
from training.ml.encoders.loading import load_encoder
from training.ml.model import RewardModel
from training.models import Checkpoint, RegistryEvent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def seed_pth(tmp_path_factory):
    """A seed-format .pth of a MiniLM reward model with a seeded random head."""
    encoder = load_encoder(ENCODER, device="cpu")
    torch.manual_seed(7)
    model = RewardModel(encoder)
    files = Files.from_model(model, hyperparameters={}, data_hash="")
    path = export_seed_pth(files, tmp_path_factory.mktemp("seed") / "reward_model.pth", encoder)
    return path, model.fc.weight.detach().clone()


def test_import_then_export_both_formats(seed_pth, staff_client):
    path, weight = seed_pth
    upload = SimpleUploadedFile("reward_model.pth", path.read_bytes())
    response = staff_client.post(
        reverse("dashboards:import"), {"file": upload, "encoder": ENCODER}, follow=True
    )
    checkpoint = Checkpoint.objects.get()
    assert f"Imported reward_model.pth as version {checkpoint.version}" in response.content.decode()
    assert RegistryEvent.objects.get().action == "import"

    url = reverse("dashboards:export", args=[checkpoint.version])
    seed = staff_client.get(url, {"format": "seed"})
    assert seed["Content-Disposition"].endswith(f'filename="stereorank-v{checkpoint.version}.pth"')
    state = torch.load(io.BytesIO(b"".join(seed.streaming_content)), weights_only=True)
    assert torch.equal(state["fc.weight"], weight)
    assert any(k.startswith("embedding_model.") for k in state)

    native = staff_client.get(url, {"format": "native"})
    archive = zipfile.ZipFile(io.BytesIO(b"".join(native.streaming_content)))
    names = {n.split("/", 1)[1] for n in archive.namelist() if not n.endswith("/")}
    assert names == {"head.safetensors", "manifest.json", "README.md"}  # README: the model card
    assert staff_client.get(url, {"format": "onnx"}).status_code == 400


def test_a_bad_upload_is_refused_readably_and_registers_nothing(staff_client, db):
    response = staff_client.post(
        reverse("dashboards:import"),
        {"file": SimpleUploadedFile("notes.txt", b"hello")},
        follow=True,
    )
    assert "Choose a .pth file." in response.content.decode()
    response = staff_client.post(
        reverse("dashboards:import"),
        {"file": SimpleUploadedFile("broken.pth", b"not a state dict"), "encoder": ENCODER},
        follow=True,
    )
    assert "not a readable state dict" in response.content.decode()
    assert not Checkpoint.objects.exists()
