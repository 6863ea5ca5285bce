"""The DJ-PO model card's reward-model class, the reference our seed ``.pth`` export and
import are checked against."""

import torch.nn as nn
from sentence_transformers import SentenceTransformer


class SeedRewardModel(nn.Module):
    """The model card's class, verbatim but with no default encoder name (no hub here)."""

    def __init__(self, sentence_transformer_model_name, embedding_dim=768):
        super().__init__()
        self.embedding_model = SentenceTransformer(sentence_transformer_model_name)
        self.fc = nn.Linear(embedding_dim, 1)
        self.dropout = nn.Dropout(p=0.1)

    def forward(self, prompts):
        embeddings = self.embedding_model.encode(prompts, convert_to_tensor=True)
        scores = self.fc(self.dropout(embeddings)).squeeze(-1)
        return scores
