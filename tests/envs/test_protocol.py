"""The evaluation protocols (lq.envs.protocol): when an episode ends, what reaches the speech goal, and a partner
whose choice between acting and speaking is learned from the demonstrations."""

import pytest
import torch

from lq.data import Demonstration, Quest
from lq.envs.calibration import fit_action_bias, fit_error, fit_listening
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import DemoTurn, QuestInstance
from lq.envs.partner import PolyEncoderPartner, ScriptedPartner, bias_for_share
from lq.envs.persuasion import partner_completions, speaker
from lq.envs.protocol import PROTOCOLS, Protocol, protocol_of
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import replay_demonstrations
from lq.eval import EvalResult, lost_table
from lq.models.poly_encoder import PolyEncoder, TextBatcher
from lq.models.pretrained import load_tokenizer
from lq.world.text import content_words
from tests.samples import demo_json, quest_json, tiny_encoder_spec

PAPER, RESTRICTED = PROTOCOLS["paper"], PROTOCOLS["restricted"]


@pytest.fixture(scope="module")
def dm():
    torch.manual_seed(0)
    model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=4).eval()
    lines = ["utterance 1", "utterance 5", "Hello.", "Please, give me the golden dragon egg.", "Who goes there?"]
    return DungeonMaster(model, TextBatcher(load_tokenizer(), 128, 24), lines, top_k=5, num_valid=5)


def _env(dm, protocol, goal="hit knight", partner=None):
    """The egg quest (a dragon and a knight; the demonstration's self utterances: "utterance 1", "utterance 5")."""
    quest = Quest.from_json(quest_json(), quest_id="egg")
    quest.goal = goal
    inst = QuestInstance(quest, Demonstration.from_json(demo_json()), "dragon_1", "knight_2")
    partner = partner or ScriptedPartner([[("speech", "Hm.")] * 40])
    env = QuestEnv([inst], partner, dm, [goal], batch_size=1, protocol=protocol, auto_reset=False)
    env.reset([0])
    return env


def test_a_self_act_completion_ends_the_episode_only_where_the_protocol_says(dm):
    env = _env(dm, PAPER)
    _, rewards, dones, infos = env.step([("action", "hit knight")])
    assert rewards == [1.0] and dones == [False] and infos[0]["act_goal"] and not infos[0]["speech_goal"]
    _, rewards, dones, infos = env.step([("action", "hit knight")])  # the act reward is paid once
    assert rewards == [0.0] and dones == [False]
    _, _, dones, infos = env.step([("speech", "utterance 5")])  # both goals: the episode ends
    assert dones == [True] and infos[0]["episode"]["act_goal"] and infos[0]["episode"]["speech_goal"]
    assert infos[0]["episode"]["steps"] == 3

    env = _env(dm, RESTRICTED)
    _, rewards, dones, infos = env.step([("action", "hit knight")])
    assert rewards == [1.0] and dones == [True] and infos[0]["episode"]["steps"] == 1


def test_a_demonstration_utterance_reaches_the_speech_goal_and_a_repeated_top_k_line_does_not(dm):
    env = _env(dm, PAPER)
    for _ in range(5):  # "Hello." is in the DM's top k: it earns its bonus once, and never the speech goal
        _, _, dones, infos = env.step([("speech", "Hello.")])
        assert not infos[0]["speech_goal"] and dones == [False]
    _, _, dones, infos = env.step([("speech", "utterance 1")])
    assert infos[0]["speech_goal"] and dones == [False]  # the act goal is still to reach
    # under the speech score (restricted), one of the demonstration's two utterances and one top-k line fall short
    env = _env(dm, RESTRICTED)
    env.step([("speech", "utterance 1")])
    _, _, _, infos = env.step([("speech", "Hello.")])
    assert env.slots[0].speech_score == pytest.approx(0.75) and infos[0]["speech_goal"]
    env = _env(dm, RESTRICTED)
    _, _, _, infos = env.step([("speech", "Hello.")])
    assert env.slots[0].speech_score == pytest.approx(0.25) and not infos[0]["speech_goal"]


def test_an_episode_without_goals_runs_the_protocols_turns(dm):
    env = _env(dm, PAPER)
    dones = [False]
    for turn in range(1, 31):
        assert not dones[0], f"ended after {turn - 1} turns"
        _, _, dones, _ = env.step([("speech", "Hello.")])
    assert dones == [True] and env.slots[0].steps == 30
    restricted = _env(dm, RESTRICTED)  # as many turns as the demonstration's self character took (3)
    assert restricted.turn_limit(restricted.slots[0]) == 3


def _play(env, turns):
    """Play ``turns`` (cycled) until the episode ends; its summary."""
    for turn in range(100):
        _, _, dones, infos = env.step([turns[turn % len(turns)]])
        if dones[0]:
            return infos[0]["episode"]
    raise AssertionError("the episode did not end")


def test_where_an_act_goal_is_lost_out_of_reach_at_speaking_turns_or_not_taken(dm):
    speak, hug = ("speech", "Hello."), ("action", "hug knight")
    reached = _play(_env(dm, PAPER), [("action", "hit knight"), ("speech", "utterance 1")])
    speaking = _play(_env(dm, PAPER), [speak])  # the goal is valid at every turn, and the agent only speaks
    not_taken = _play(_env(dm, PAPER), [speak, hug])
    out_of_reach = _play(_env(dm, PAPER, goal="eat golden dragon egg"), [hug])  # the knight holds it
    assert (speaking["goal_open_turns"], speaking["goal_open_acts"]) == (30, 0)
    assert (not_taken["goal_open_turns"], not_taken["goal_open_acts"]) == (30, 15)
    assert out_of_reach["goal_open_turns"] == 0 and reached["goal_open_acts"] >= 1
    result = EvalResult.of([reached, speaking, not_taken, out_of_reach, speaking])
    assert result.where_lost == {"lost_never_valid": 0.2, "lost_speaking": 0.4, "lost_not_taken": 0.2}
    assert result.metrics("test/")["test/lost_speaking"] == 0.4
    assert all(v != v for v in EvalResult.of([]).where_lost.values())  # no episodes: NaN, not 0
    table = lost_table([("agent", [result, EvalResult.of([reached, not_taken])]), ("ceiling", [EvalResult.of([])])])
    assert "| agent | 2 | 0.350 ± 0.150 | 0.100 ± 0.100 | 0.200 ± 0.200 | 0.350 ± 0.150 |" in table
    assert "ceiling" not in table


def test_the_valid_output_targets_hold_the_demonstration_where_the_protocol_says(dm):
    env = _env(dm, PAPER)
    _, infos = env._observe([{}])
    said = [dm.utterances.index["utterance 1"], dm.utterances.index["utterance 5"]]
    assert infos[0]["target_action_ids"] == [0] and infos[0]["target_utterance_ids"] == said
    _, infos = _env(dm, RESTRICTED)._observe([{}])
    assert infos[0]["target_action_ids"] == [] and infos[0]["target_utterance_ids"] == []


def test_protocols_by_name_dict_and_with_clear_errors():
    assert protocol_of("paper") == Protocol() and protocol_of(None) == RESTRICTED
    assert protocol_of(RESTRICTED.as_dict()) == RESTRICTED
    with pytest.raises(ValueError, match="unknown protocol 'papr': choose from paper, restricted"):
        protocol_of("papr")
    with pytest.raises(ValueError, match="unknown protocol field max_step"):
        protocol_of({"max_step": 3})
    with pytest.raises(ValueError, match="unknown choice 'all'"):
        Protocol(choice="all")
    assert "whole spaces" in PAPER.describe() and "30-turn" in PAPER.describe()


def test_bias_for_share_acts_on_that_share_of_turns():
    gaps = torch.tensor([3.0, -1.0, 0.5, -4.0, float("-inf")])  # -inf: no valid action, never counted
    for share, acting in ((0.0, 0), (0.25, 1), (0.5, 2), (1.0, 4)):
        bias = bias_for_share(gaps, share)
        assert int((gaps + bias > 0).sum()) == acting


class WordPartner(PolyEncoderPartner):
    """A partner whose scores are the words a candidate shares with the last line it heard: asked for the egg, its
    best action (giving it) outscores its best utterance; otherwise its best utterance wins. Whether it acts is left
    to the action bias that :func:`fit_action_bias` learns."""

    def __init__(self, utterances):
        self.utterances_list, self.action_bias = utterances, 0.0

    def choices(self, contexts, valid_actions):
        gaps, speech, actions = [], [], []
        for context, options in zip(contexts, valid_actions, strict=True):
            heard = content_words(context.splitlines()[-1])

            def score(text, heard=heard):
                return len(content_words(text) & heard)

            said = max(self.utterances_list, key=score)
            best = max(options, key=score) if options else None
            gaps.append(score(best) - score(said) - 4.5 if best else float("-inf"))
            speech.append(("speech", said))
            actions.append(("action", best) if best else None)
        return torch.tensor(gaps), speech, actions

    def action_spread(self, turns):
        return 1.0


def _persuasion_demo(asks: bool) -> Demonstration:
    """The knight gives the dragon its egg when asked for it (the partner completes the goal), or is never asked."""
    lines = ["Who goes there?", "Hello.", "What do you want?"]
    ask = "Please, give me the golden dragon egg." if asks else "Hello."
    acts = [
        {"type": "speech", "text": lines[0]},
        {"type": "speech", "text": lines[1]},
        {"type": "speech", "text": lines[2]},
        {"type": "speech", "text": ask},
        {"type": "action", "text": "give golden dragon egg to dragon"} if asks else {"type": "speech", "text": "Hm."},
    ]
    data = demo_json()
    data["conv_info"]["acts"] = acts
    return Demonstration.from_json(data)


def test_the_calibrated_partner_completes_the_goal_when_persuaded_as_in_a_demonstration(dm):
    quest = Quest.from_json(quest_json(), quest_id="egg")  # the knight carries the egg
    quest.goal = "steal golden dragon egg from knight"
    train = [QuestInstance(quest, _persuasion_demo(asks), "dragon_1", "knight_2") for asks in (True, False, False)]
    partner = WordPartner(["Who goes there?", "What do you want?", "Hm.", "Hello."])
    asked = ["_partner_say Please, give me the golden dragon egg."]
    assert partner.act(asked, [["give golden dragon egg to dragon"]])[0][0] == "speech"  # no bias: it never acts
    bias, fit = fit_action_bias(partner, dm, train, [quest.goal])
    assert fit["demonstration_partner_completions"] == pytest.approx(1 / 3)
    assert fit["partner_completions"] == pytest.approx(1 / 3)  # it gives the egg when asked, and only then
    env = QuestEnv(train, partner, dm, [quest.goal], batch_size=3, protocol=PAPER, auto_reset=False)
    episodes = replay_demonstrations(env, "model")
    assert [e["act_goal_by"] for e in episodes] == ["partner", None, None]
    assert "give golden dragon egg to dragon" in episodes[0]["transcript"]
    # held-out demonstrations where the knight is asked twice in three: the share that matches their completions
    held_out = [QuestInstance(quest, _persuasion_demo(asks), "dragon_1", "knight_2") for asks in (True, True, False)]
    _, fit = fit_action_bias(partner, dm, train, [quest.goal], held_out)
    assert fit["held_out_demonstration_partner_completions"] == pytest.approx(2 / 3)
    assert fit["pooled_demonstration_completions"] == pytest.approx(3 / 6)  # counted with the training ones
    assert fit["action_share"] == pytest.approx(fit["demonstration_action_share"])  # the smallest share that matches
    assert fit["held_out_partner_completions"] == pytest.approx(2 / 3)
    assert fit["partner_completions"] == pytest.approx(1 / 3)


def test_the_calibration_weighs_acting_more_than_the_demonstrations_partners_did():
    """Matching the goals by acting on four times the demonstrations' share of turns is farther from them than acting
    on their share and completing 27 of their 47 goals (a partner that listens); at one share, the closer count
    wins."""
    exact_but_acting_more = fit_error(47 / 460, 47 / 460, share=0.58, demonstration_share=0.145)
    listening_at_their_share = fit_error(27 / 460, 47 / 460, share=0.145, demonstration_share=0.145)
    assert listening_at_their_share < exact_but_acting_more
    assert fit_error(40 / 460, 47 / 460, 0.29, 0.145) < fit_error(20 / 460, 47 / 460, 0.29, 0.145)
    assert fit_error(47 / 460, 47 / 460, 0.145, 0.145) == 0


def test_the_partner_listens_as_much_as_the_demonstrations_partners_did(dm):
    """A valid action gains for each content word it shares with what the agent said last; how much is fit on the
    demonstrations' partner action turns, here ones where the partner always did what it was asked."""
    torch.manual_seed(3)
    model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=4).eval()
    actions = ["give golden dragon egg to dragon", "hug dragon", "hit dragon", "follow dragon"]
    partner = PolyEncoderPartner(model, TextBatcher(load_tokenizer(), 128, 24), ["Hm.", "Hello."], actions)
    asks = {
        "give golden dragon egg to dragon": "Please, give me the golden egg.",
        "hug dragon": "A hug, knight, please.",
        "hit dragon": "Go on, hit me if you dare.",
        "follow dragon": "Follow me, knight.",
    }
    turns = [DemoTurn(f"_self_say Hello.\n_partner_say {ask}", "action", done, actions) for done, ask in asks.items()]
    turns.append(DemoTurn("_partner_say Hello.", "speech", "Hm.", actions))  # a turn it spoke: not counted
    fit = fit_listening(partner, turns)
    assert fit["action_hits"] < 1.0 and fit["action_hits_listening"] == 1.0
    assert partner.listen_weight == fit["listen_weight"] > 0
    best = partner.choices_at(turns[:4])[1]
    assert [b[1] for b in best] == list(asks)  # each time, what it was asked
    partner.listen_weight = 0.0  # a partner that does not listen: what it does does not follow the request
    assert [b[1] for b in partner.choices_at(turns[:4])[1]] != list(asks)


def test_a_partner_that_acts_when_asked_completes_the_goal_for_the_speaker_that_asks(dm):
    """The persuasion probe: the goal-reading speaker asks for the egg and the partner gives it; a random speaker
    among 200 other lines seldom says the one line that asks."""
    partner = WordPartner(["Who goes there?", "Hm."])
    partner.action_bias = 1.0  # it acts when its best action shares 4 words with what it heard, not for fewer
    env = _env(dm, PAPER, goal="steal golden dragon egg from knight", partner=partner)
    lines = [f"line {i}" for i in range(200)] + ["Please, give me the golden dragon egg."]
    assert partner_completions(env, speaker("goal", lines)) == 1.0
    by_random = [partner_completions(env, speaker("random", lines), seed) for seed in range(10)]
    assert sum(by_random) / 10 < 0.5
    partner.action_bias = 0.0  # a partner that never acts completes nothing, whatever it hears
    assert partner_completions(env, speaker("goal", lines)) == 0.0
    with pytest.raises(ValueError, match="unknown speaker 'loud': choose from random, goal"):
        speaker("loud", lines)


def test_a_remembering_partner_chooses_as_one_that_scores_every_turn_and_encodes_each_context_once(dm):
    """The calibration replays the same demonstrations under each setting: remembered, a (context, valid actions) pair
    is encoded once, and the gaps and choices are those of scoring it afresh, at any listening."""
    torch.manual_seed(3)
    model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=4).eval()
    actions = ["give golden dragon egg to dragon", "hug dragon", "hit dragon", "follow dragon"]
    partner = PolyEncoderPartner(model, TextBatcher(load_tokenizer(), 128, 24), ["Hm.", "Hello."], actions)
    contexts = ["_partner_say Please, give me the egg.", "_partner_say Follow me.", "_partner_say Hello."]
    valid = [actions, actions[1:], []]
    encoded = []
    encode = partner._encode
    partner._encode = lambda texts: encoded.append(list(texts)) or encode(texts)
    for weight in (0.0, 2.0):
        partner.listen_weight = weight
        fresh = partner.choices(contexts, valid)
        with partner.remembering():
            first = partner.choices(contexts, valid)
            again = partner.choices(contexts[::-1], valid[::-1])
        assert torch.equal(first[0], fresh[0]) and first[1:] == fresh[1:]
        assert torch.equal(again[0], fresh[0].flip(0)) and again[2] == fresh[2][::-1]
        assert fresh[0][2] == float("-inf") and fresh[2][2] is None  # no valid action: it speaks
    assert encoded == [contexts] * 4  # afresh each time, remembered once per block
    assert partner.memo is None


def test_an_environment_that_ranks_no_utterances_asks_the_dm_nothing(dm, monkeypatch):
    """The calibration's replays read act goals alone: with ``rank_utterances=False`` the DM is never asked, which only
    a protocol whose speech goal is the demonstration's lines allows."""
    quest = Quest.from_json(quest_json(), quest_id="egg")
    inst = QuestInstance(quest, Demonstration.from_json(demo_json()), "dragon_1", "knight_2")
    partner = ScriptedPartner([[("speech", "Hm.")] * 40])
    env = QuestEnv([inst], partner, dm, [quest.goal], 1, protocol=PAPER, auto_reset=False, rank_utterances=False)
    monkeypatch.setattr(dm, "rank", lambda contexts: pytest.fail("the DM was asked"))
    env.reset([0])
    _, rewards, _, infos = env.step([("speech", "utterance 5")])
    assert infos[0]["speech_goal"] and rewards == [infos[0]["speech_reward"]] == [0.25]  # the line, no top-k bonus
    with pytest.raises(ValueError, match="its speech goal needs the DM's ranking"):
        QuestEnv([inst], partner, dm, [quest.goal], protocol=Protocol(speech_goal="score"), rank_utterances=False)
