from collections import Counter

from lq.data.affordances import infer
from lq.data.default_db import compose_default_db, load_default_db


def test_shipped_db_is_what_the_module_composes():
    assert load_default_db() == compose_default_db()


def test_shipped_db_is_large_and_varied_enough_for_quests():
    db = load_default_db()
    assert len(db.rooms) >= 60 and len({r.category for r in db.rooms}) >= 20
    assert len(db.characters) >= 150 and all(c.persona and c.persona[0] for c in db.characters)
    assert len({c.persona[0] for c in db.characters}) == len(db.characters)
    assert len(db.objects) >= 300 and len({o.name for o in db.objects}) == len(db.objects)
    kinds = Counter(a for o in db.objects for a, v in infer(o.name, o.base_form).as_dict().items() if v)
    for affordance in ("wearable", "wieldable", "food", "drink", "container"):
        assert kinds[affordance] >= 15, (affordance, kinds)
    assert kinds["gettable"] < len(db.objects)  # some furniture stays put
