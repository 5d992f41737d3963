"""adk-python's side of the artifact interop test (`tests/it/artifacts.rs`).

Runs google-adk 2.13.0's own FileArtifactService over a directory sinew-adk also uses:

    adk_artifacts.py read ROOT
        Prints, for every artifact key of session `s1` (app `interop`, user `u1`), its versions
        with their metadata and the content of each version, then saves a version 1 of
        `from-python.txt` (text) and `user:shared.bin` (bytes, image/png) with custom metadata.

Output: one JSON object per line.
"""

import asyncio
import base64
import json
import sys

from google.adk.artifacts import FileArtifactService
from google.genai import types

APP, USER, SESSION = "interop", "u1", "s1"


def part_json(part):
    if part is None:
        return None
    if part.text is not None:
        return {"text": part.text}
    return {
        "mimeType": part.inline_data.mime_type,
        "data": base64.b64encode(part.inline_data.data).decode(),
    }


async def read(root):
    service = FileArtifactService(root)
    keys = await service.list_artifact_keys(app_name=APP, user_id=USER, session_id=SESSION)
    for key in keys:
        versions = await service.list_artifact_versions(
            app_name=APP, user_id=USER, filename=key, session_id=SESSION
        )
        for version in versions:
            part = await service.load_artifact(
                app_name=APP, user_id=USER, filename=key, session_id=SESSION, version=version.version
            )
            print(json.dumps({
                "key": key,
                "version": version.version,
                "canonicalUri": version.canonical_uri,
                "mimeType": version.mime_type,
                "customMetadata": version.custom_metadata,
                "part": part_json(part),
            }, sort_keys=True))
    for _ in range(2):
        await service.save_artifact(
            app_name=APP, user_id=USER, session_id=SESSION, filename="from-python.txt",
            artifact=types.Part(text="written by adk-python"), custom_metadata={"by": "python"},
        )
    await service.save_artifact(
        app_name=APP, user_id=USER, session_id=SESSION, filename="user:shared.bin",
        artifact=types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\r\n")),
    )


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "read":
        sys.exit(__doc__)
    asyncio.run(read(sys.argv[2]))
