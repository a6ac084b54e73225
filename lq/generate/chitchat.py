"""A general chit-chat corpus for the ``general_dialogue`` task (everyday talk, no fantasy world).

The MiniLM initialisation stands in for the Reddit prior of the paper; this small corpus gives
the task something to train and evaluate on by default. Each record is one conversation,
``{"dialogue": [turn, turn, ...]}`` per line of a JSONL file, the same shape a user's own
Reddit-style corpus takes.
"""

from __future__ import annotations

import random

TOPICS = {
    "weather": (
        ["the rain", "this heat", "the wind", "the fog this morning", "the first snow"],
        ["Did you see {x}?", "I can't stand {x}.", "Is {x} going to last all week?", "Honestly, I love {x}."],
        [
            "Yes, it ruined my plans.",
            "It doesn't bother me much.",
            "My dog hates it.",
            "They say it will clear up tomorrow.",
            "I stayed inside all day because of it.",
        ],
    ),
    "food": (
        ["pancakes", "that new noodle place", "homemade soup", "spicy curry", "fresh bread"],
        [
            "Have you tried {x}?",
            "I made {x} last night.",
            "I've been craving {x} all day.",
            "What do you think of {x}?",
        ],
        [
            "Not yet, is it good?",
            "I could eat that every day.",
            "I'm more of a salad person.",
            "My grandmother makes the best.",
            "It was a bit too salty for me.",
        ],
    ),
    "work": (
        ["my boss", "the new project", "the long meetings", "working from home", "my commute"],
        [
            "I'm so tired of {x}.",
            "Let me tell you about {x}.",
            "How do you deal with {x}?",
            "{x} is getting better, I think.",
        ],
        [
            "I know exactly what you mean.",
            "Have you thought about changing jobs?",
            "At least it pays the bills.",
            "Mine is the same, believe me.",
            "Take a holiday, you deserve it.",
        ],
    ),
    "hobbies": (
        ["painting", "running", "the guitar", "gardening", "chess", "knitting"],
        [
            "I just started {x}.",
            "Do you still do {x}?",
            "I spent the whole weekend on {x}.",
            "I want to get better at {x}.",
        ],
        [
            "That sounds relaxing.",
            "I tried that once and gave up.",
            "You should join a club.",
            "Practice every day, it helps.",
            "What got you into it?",
        ],
    ),
    "travel": (
        ["the coast", "the mountains", "an old city", "the lake house", "a tiny island"],
        [
            "We're going to {x} next month.",
            "Have you ever been to {x}?",
            "I dream of a trip to {x}.",
            "I just got back from {x}.",
        ],
        [
            "Lucky you! Take lots of pictures.",
            "I went years ago and loved it.",
            "Don't forget sunscreen.",
            "How long are you staying?",
            "I've always wanted to go.",
        ],
    ),
    "family": (
        ["my sister", "my parents", "the kids", "my cousin", "grandpa"],
        ["{x} called me today.", "I'm visiting {x} this weekend.", "{x} is driving me crazy.", "I miss {x}."],
        [
            "That's nice, say hi from me.",
            "Family can be hard sometimes.",
            "You should call more often.",
            "Are they doing well?",
            "I know the feeling.",
        ],
    ),
    "pets": (
        ["my cat", "the neighbour's dog", "our new puppy", "the parrot", "my old hamster"],
        ["{x} did the funniest thing today.", "{x} kept me up all night.", "Have you met {x}?", "I think {x} is sick."],
        [
            "Animals are the best.",
            "Oh no, I hope it's okay.",
            "Send me a photo!",
            "Mine does that too.",
            "You should take it to the vet.",
        ],
    ),
}
FOLLOW_UPS = [
    "Really?",
    "Tell me more.",
    "Why do you say that?",
    "Same here.",
    "I didn't know that.",
    "How come?",
    "That's funny.",
    "Oh, I see.",
    "No way!",
    "Fair enough.",
]


def generate_conversation(rng: random.Random) -> list[str]:
    topic_a, topic_b = rng.sample(list(TOPICS), 2)
    turns: list[str] = []
    for topic in (topic_a, topic_b):
        things, openers, replies = TOPICS[topic]
        x = rng.choice(things)
        opener = rng.choice(openers).format(x=x)
        turns.append(opener[:1].upper() + opener[1:])
        turns.append(rng.choice(replies))
        if rng.random() < 0.6:
            turns.append(rng.choice(FOLLOW_UPS))
            turns.append(rng.choice(replies))
    return turns
