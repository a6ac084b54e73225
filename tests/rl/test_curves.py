from lq.rl.curves import StartedEpisodes


def _ended(serial, act_goal):
    return {"serial": serial, "act_goal": act_goal, "speech_goal": False, "return": float(act_goal), "instance": 0,
            "left_start": False, "transcript": "..."}  # fmt: skip


def test_the_curves_wait_for_the_episodes_that_started_first_not_those_that_ended_first():
    curve = StartedEpisodes(size=3)
    # four episodes start (serials 0-3); 1 and 3 reach their goal at once and end, 0 and 2 still play
    curve.add([_ended(1, True), _ended(3, True)])
    assert curve.window(playing=[0, 2, 4, 5]) == []  # the last four to end would say 1.0
    curve.add([_ended(0, False)])
    assert [e["act_goal"] for e in curve.window(playing=[2, 4, 5, 6])] == [False, True]
    curve.add([_ended(2, False), _ended(4, True)])
    window = curve.window(playing=[5, 6, 7, 8])  # the last three to start of the five that have all ended
    assert [e["act_goal"] for e in window] == [False, True, True]
    assert set(window[0]) == {"act_goal", "speech_goal", "return", "instance", "left_start"}  # no transcripts kept
    assert sorted(curve.ended) == [2, 3, 4]  # those older than the window are forgotten
