import pytest

from lq.data.io import atomic_open, write_json


def test_crash_during_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out.json"
    write_json(target, {"v": 1})
    with pytest.raises(RuntimeError):
        with atomic_open(target) as handle:
            handle.write('{"v": 2, "half')
            raise RuntimeError("crash")
    assert target.read_text() == '{\n  "v": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_jsonl_readers_name_the_line(tmp_path):
    from lq.data.atomic_light import load_atomic_light
    from lq.data.chitchat import load_chitchat
    from lq.data.errors import DataFormatError

    (tmp_path / "chat.jsonl").write_text('{"dialogue": ["hi", "hello"]}\n\n{"dialogue": "hi"}\n')
    with pytest.raises(DataFormatError) as info:
        load_chitchat(tmp_path / "chat.jsonl")
    assert info.value.record == "line 3" and info.value.field == "dialogue"
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.jsonl").write_text('{"context": "c", "tail": "t", "relation": "xWant", "event": "e"}\n')
    (tmp_path / "valid.jsonl").write_text("{broken\n")
    with pytest.raises(DataFormatError, match="invalid JSON") as info:
        load_atomic_light(tmp_path)
    assert info.value.record == "line 1" and "valid.jsonl" in str(info.value)
    with pytest.raises(DataFormatError, match="file not found"):
        load_chitchat(tmp_path / "missing.jsonl")


def test_atomic_writes_get_the_modes_a_direct_write_would(tmp_path):
    """A temporary file (0600) or folder (0700) becomes what ``open`` and ``mkdir`` would have made under the umask:
    a bundle or a dataset written atomically is readable by others, as one written directly."""
    import os
    import stat

    from lq.data.io import atomic_dir, umask

    old = os.umask(0o022)
    try:
        assert umask() == 0o022
        with atomic_open(tmp_path / "a.json") as handle:
            handle.write("{}")
        with atomic_dir(tmp_path / "bundle") as folder:
            (folder / "sub").mkdir(mode=0o700)
            (folder / "sub" / "weights.bin").write_bytes(b"x")
            os.chmod(folder / "sub" / "weights.bin", 0o600)  # as a writer that makes private files leaves it
    finally:
        os.umask(old)

    def mode(path):
        return stat.S_IMODE(path.stat().st_mode)

    assert mode(tmp_path / "a.json") == 0o644
    assert [mode(tmp_path / "bundle"), mode(tmp_path / "bundle" / "sub")] == [0o755, 0o755]
    assert mode(tmp_path / "bundle" / "sub" / "weights.bin") == 0o644
