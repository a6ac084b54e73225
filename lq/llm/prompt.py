"""What a language model agent reads: the agent's context (:mod:`lq.data.context`'s tagged lines: the setting, who
it is and who its partner is, what each carries, its motivations, then the turns so far) as chat messages, then token
ids in the model's own chat template.

The scene and the motivations are the system message, in the second person ("You are the dragon. ..."); the turns
so far and the question of the head that chooses (what to do, or what to say) are one user message, each turn a line
("the knight says: Who goes there?", "you do: get golden egg"); the model's answer, the candidate scored
(:mod:`lq.llm.scoring`), is the assistant's turn. One user message, not a turn per line: chat templates refuse or
merge two user (or two assistant) messages in a row, and the partner may speak several times between the agent's
turns.
"""

from __future__ import annotations

from lq.data.context import HEADER_TAGS, HISTORY_TAGS

# the question each head answers, after the turns so far
QUESTIONS = {
    "act": "What do you do next? Answer with one action.",
    "speak": "What do you say next? Answer with one utterance.",
}
_SCENE = (  # tag, how the system message says it
    ("_self_persona", "In your own words: {}"),
    ("_setting_name", "Where you are: {}."),
    ("_setting_desc", "{}"),
    ("_setting_objects", "Here: {}."),
    ("_self_carrying", "You carry: {}."),
    ("_partner_name", "With you is the {}."),
    ("_partner_persona", "In their words: {}"),
    ("_partner_carrying", "They carry: {}."),
    ("_short_motivation", "Your motivation now: {}"),
    ("_mid_motivation", "Your motivation for the day: {}"),
    ("_long_motivation", "Your motivation in life: {}"),
)
_SELF = {"say": "you say", "act": "you do", "emote": "you show"}  # a turn's line, by its kind
_PARTNER = {"say": "says", "act": "does", "emote": "shows"}


def context_fields(context: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """A serialised context's header, by tag, and its turns in order as (tag, text). Raises ``ValueError`` on a line
    without a known tag (a context of another format)."""
    header, turns = {}, []
    for line in context.splitlines():
        if not line.strip():
            continue
        tag, _, text = line.partition(" ")
        if tag in HISTORY_TAGS:
            turns.append((tag, text.strip()))
        elif tag in HEADER_TAGS:
            header[tag] = text.strip()
        else:
            raise ValueError(f"context line {line[:60]!r}: no known tag (lq.data.context's HEADER_TAGS, HISTORY_TAGS)")
    return header, turns


def chat_messages(context: str, head: str) -> list[dict[str, str]]:
    """The chat messages a model reads before it answers as ``head`` (``act`` or ``speak``): a system message of the
    scene and motivations, a user message of the turns so far and the head's question (:data:`QUESTIONS`)."""
    if head not in QUESTIONS:
        raise ValueError(f"head {head!r}: choose {' or '.join(QUESTIONS)}")
    header, turns = context_fields(context)
    me = header.get("_self_name", "character")
    partner = header.get("_partner_name", "other character")
    system = [f"You are the {me}, a character in a fantasy text adventure."]
    system += [say.format(header[tag]) for tag, say in _SCENE if header.get(tag)]
    lines = []
    for tag, text in turns:
        who, kind = tag[1:].split("_", 1)
        lines.append(f"{_SELF[kind]}: {text}" if who == "self" else f"the {partner} {_PARTNER[kind]}: {text}")
    story = "What has happened so far:\n" + "\n".join(lines) if lines else "Nothing has happened yet."
    user = f"{story}\n\n{QUESTIONS[head]}"
    return [{"role": "system", "content": " ".join(system)}, {"role": "user", "content": user}]


def prompt_ids(tokenizer, messages: list[dict[str, str]]) -> list[int]:
    """The messages' token ids in the tokenizer's chat template, ending where the assistant's answer starts."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{type(tokenizer).__name__} has no chat template: an instruction-tuned model's tokenizer has")
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
