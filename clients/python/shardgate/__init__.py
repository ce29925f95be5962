"""A client for shardgate, the multi-tenant sharded storage gateway.

`Shardgate(base_url, token)` calls the operations generated from shardgate's OpenAPI document
(`shardgate.generated`), iterates listings across their pages, streams blobs and issues valet
keys; `valet_download` and `valet_upload` use a valet URL with no token. Every refusal is a
`ShardgateProblem` carrying the stable `code`.
"""

from .client import Shardgate
from .problem import ShardgateProblem
from .valet import valet_download, valet_upload

__all__ = ["Shardgate", "ShardgateProblem", "valet_download", "valet_upload"]
