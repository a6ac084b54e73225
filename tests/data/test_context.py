from lq.data.context import HEADER_TAGS, HISTORY_TAGS, MOTIVATION_LEVELS, Context, timeline_prefix
from lq.models.poly_encoder import HEADER_PRIORITY, split_history


def test_every_line_a_context_writes_carries_a_known_tag_and_the_batcher_ranks_the_header_ones():
    full = Context(
        setting_name="lair",
        setting_desc="A cave.",
        self_name="dragon",
        self_persona="I am a dragon.",
        partner_name="knight",
        partner_persona="I am a knight.",
        carrying=["egg"],
        objects=["chest"],
        partner_carrying=["lance"],
        motivations={level: f"{level} aim" for level in (*MOTIVATION_LEVELS, "self")},
        history=[(who, kind, "x") for who in ("self", "partner") for kind in ("speech", "action", "emote")],
    )
    text = full.serialise() + "\n" + timeline_prefix(["get egg"])
    tags = [line.split(" ", 1)[0] for line in text.split("\n")]
    assert set(tags) == set(HEADER_TAGS) | set(HISTORY_TAGS)  # every tag written, none unknown
    header, history = split_history(full.serialise())
    assert {line.split(" ", 1)[0] for line in header.split("\n")} <= set(HEADER_PRIORITY)
    assert [line.split(" ", 1)[0] for line in history.split("\n")] == list(HISTORY_TAGS)


def test_the_partner_sees_the_scene_with_the_roles_swapped_and_no_motivations():
    scene = Context(
        setting_name="lair",
        self_name="dragon",
        self_persona="I am a dragon.",
        partner_name="knight",
        partner_persona="I am a knight.",
        carrying=["egg"],
        motivations={"short": "get the egg"},
        history=[("partner", "speech", "Halt!"), ("self", "action", "get egg")],
    )
    other = scene.swapped()
    assert (other.self_name, other.self_persona, other.partner_name, other.partner_persona) == (
        "knight",
        "I am a knight.",
        "dragon",
        "I am a dragon.",
    )
    assert other.history == [("self", "speech", "Halt!"), ("partner", "action", "get egg")]
    assert other.motivations == {} and other.carrying == [] and other.setting_name == "lair"
    assert other.swapped().history == scene.history
