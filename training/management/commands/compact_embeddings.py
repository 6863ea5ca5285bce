"""manage.py compact_embeddings: merge each encoder's embedding shards into one."""

from core.commands import ServiceCommand
from training.storage import encoders


class Command(ServiceCommand):
    help = (
        "Merge this node's embedding cache shards into one per encoder (safe while other "
        "processes read and write it; writes past STEREORANK_EMBEDDING_CACHE_MAX_SHARDS "
        "merge the small ones on their own)."
    )

    def handle(self, *args, **options):
        merged = encoders.embedding_cache().compact_all()
        for key, rows in merged.items():
            self.stdout.write(f"{key}: {rows} embeddings in one shard")
        if not merged:
            self.stdout.write("the embedding cache is empty")
