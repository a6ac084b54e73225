"""What an LLM agent reads (:mod:`lq.llm.prompt`): its context as chat messages, in the model's chat template."""

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import PreTrainedTokenizerFast

from lq.llm.prompt import QUESTIONS, chat_messages, prompt_ids

CONTEXT = """_setting_name dragon's lair
_setting_desc A cave of gold.
_self_name dragon
_self_persona I am a dragon who guards my hoard.
_partner_name knight
_setting_objects gold coins, old chest
_short_motivation I need to get the golden egg back.
_partner_say Who goes there?
_self_say It is I.
_partner_act get gold coins
_self_emote growl"""


def test_the_scene_is_the_system_message_and_the_turns_and_question_the_users():
    system, user = chat_messages(CONTEXT, "act")
    assert system["role"] == "system" and user["role"] == "user"
    assert system["content"].startswith("You are the dragon, a character in a fantasy text adventure.")
    for said in ("In your own words: I am a dragon who guards my hoard.", "Where you are: dragon's lair.",
                 "Here: gold coins, old chest.", "With you is the knight.",
                 "Your motivation now: I need to get the golden egg back."):  # fmt: skip
        assert said in system["content"]
    assert user["content"] == (
        "What has happened so far:\nthe knight says: Who goes there?\nyou say: It is I.\nthe knight does: get gold "
        f"coins\nyou show: growl\n\n{QUESTIONS['act']}"
    )
    assert chat_messages(CONTEXT.split("\n_partner_say")[0], "speak")[1]["content"] == (
        f"Nothing has happened yet.\n\n{QUESTIONS['speak']}"
    )
    with pytest.raises(ValueError, match="head 'think': choose act or speak"):
        chat_messages(CONTEXT, "think")
    with pytest.raises(ValueError, match="no known tag"):
        chat_messages("_weather rainy", "act")


def test_the_prompt_is_the_messages_in_the_models_chat_template_up_to_the_answer():
    words = "<s> system user assistant : you are the dragon".split()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=_word_tokenizer(words), unk_token="[UNK]")
    messages = [{"role": "system", "content": "you are"}, {"role": "user", "content": "the dragon"}]
    with pytest.raises(ValueError, match="has no chat template"):
        prompt_ids(tokenizer, messages)
    tokenizer.chat_template = (
        "<s>{% for m in messages %} {{ m['role'] }} : {{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %} assistant :{% endif %}"
    )
    ids = prompt_ids(tokenizer, messages)
    assert tokenizer.convert_ids_to_tokens(ids) == "<s> system : you are user : the dragon assistant :".split()


def _word_tokenizer(words):
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = WhitespaceSplit()
    return tokenizer
