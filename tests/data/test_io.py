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
