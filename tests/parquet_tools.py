"""Test helper: re-record the checksums of a deliberately edited Parquet-long store.

Tests that forge a store's content (an inconsistent attribute, a rewritten
part or labels file) to exercise the reader's semantic checks call
:func:`reseal` afterwards, so that the forged store gets past the
checksums of format version 3 and reaches the check under test.  Tests of
the checksums themselves never reseal.
"""

from __future__ import annotations

import json
from pathlib import Path

from ultrafs.store.parquet_integrity import (file_checksum, part_file_checksums,
                                             seal_metadata)
from ultrafs.store.parquet_long import COLUMN_IDS_FILE, LABELS_FILE, METADATA_FILE


def reseal(path, attrs=None) -> None:
    """Write ``attrs`` (default: the current ones) with fresh checksums of every file.

    A part file that no longer parses gets a footer checksum of 0 (so it
    still fails when read); its row groups keep the count the
    ``row_groups`` table lists, so that the reader's row-count check, not
    the checksum list, reports a file with another number of row groups.
    """
    path = Path(path)
    if attrs is None:
        attrs = json.loads((path / METADATA_FILE).read_text())
    if isinstance(attrs.get("checksums"), dict):
        listed = attrs["row_groups"]["file"] if isinstance(attrs.get("row_groups"),
                                                            dict) else []
        footers, row_groups = [], []
        for number, name in enumerate(attrs.get("files", [])):
            wanted = sum(1 for f in listed if f == number)
            try:
                footer, crcs = part_file_checksums(path / name)
            except Exception:
                footer, crcs = 0, []
            footers.append(footer)
            row_groups.extend((list(crcs) + [0] * wanted)[:wanted])
        checksums = dict(attrs["checksums"], footers=footers, row_groups=row_groups)
        for key, name in (("labels", LABELS_FILE), ("column_ids", COLUMN_IDS_FILE)):
            if key in checksums and (path / name).is_file():
                checksums[key] = file_checksum(path / name)
        attrs = dict(attrs, checksums=checksums)
    if "metadata_checksum" in attrs:
        attrs = seal_metadata(attrs)
    (path / METADATA_FILE).write_text(json.dumps(attrs))
