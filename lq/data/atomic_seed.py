"""An ATOMIC-format seed of everyday events that also happen in a fantasy world, written by us.

Used for ATOMIC-LIGHT where the real ATOMIC release is not at hand. Rows follow ATOMIC v4:
``event`` with PersonX / PersonY, relation lists, and a trn / dev / tst split.
"""

from __future__ import annotations

from lq.data.atomic import RELATIONS, AtomicEvent

# event: (xIntent, xNeed, xWant, xEffect), each a list of tails
SEED: dict[str, tuple[list[str], list[str], list[str], list[str]]] = {
    "PersonX gives PersonY a gift": (
        ["to be kind", "to win PersonY's favour"],
        ["to buy a gift", "to find PersonY"],
        ["to see PersonY smile", "to be thanked"],
        ["feels generous", "has less gold"],
    ),
    "PersonX steals PersonY's purse": (
        ["to get rich", "to pay a debt"],
        ["to sneak close", "to be quick"],
        ["to run away", "to hide the purse"],
        ["gets caught", "has more coins"],
    ),
    "PersonX hugs PersonY": (
        ["to comfort PersonY", "to show affection"],
        ["to walk over to PersonY"],
        ["to say goodbye", "to stay close"],
        ["feels warm", "smiles"],
    ),
    "PersonX hits PersonY": (
        ["to hurt PersonY", "to defend themselves"],
        ["to be angry", "to make a fist"],
        ["to run", "to say sorry"],
        ["gets hurt hand", "starts a fight"],
    ),
    "PersonX eats the bread": (
        ["to stop being hungry"],
        ["to get the bread", "to be hungry"],
        ["to drink something", "to rest"],
        ["feels full", "gains strength"],
    ),
    "PersonX drinks the wine": (
        ["to relax", "to celebrate"],
        ["to pour the wine", "to find a cup"],
        ["to sing", "to sleep"],
        ["gets drunk", "feels warm"],
    ),
    "PersonX wears a cloak": (
        ["to stay warm", "to hide"],
        ["to take the cloak"],
        ["to go outside"],
        ["feels warm", "looks mysterious"],
    ),
    "PersonX wields a sword": (
        ["to fight", "to protect PersonY"],
        ["to pick up the sword", "to train"],
        ["to attack", "to look brave"],
        ["feels strong", "scares PersonY"],
    ),
    "PersonX puts the coin in the chest": (
        ["to keep the coin safe"],
        ["to open the chest", "to have the coin"],
        ["to lock the chest"],
        ["feels secure"],
    ),
    "PersonX follows PersonY": (
        ["to see where PersonY goes", "to protect PersonY"],
        ["to keep up"],
        ["to catch PersonY", "to talk to PersonY"],
        ["gets tired", "finds a new place"],
    ),
    "PersonX asks PersonY for help": (
        ["to solve a problem"],
        ["to find PersonY", "to be humble"],
        ["to get help", "to thank PersonY"],
        ["feels relieved"],
    ),
    "PersonX tells PersonY a story": (
        ["to entertain PersonY"],
        ["to remember the story"],
        ["to make PersonY laugh"],
        ["feels happy", "is listened to"],
    ),
    "PersonX lies to PersonY": (
        ["to avoid trouble", "to get something"],
        ["to think of a lie"],
        ["to not get caught"],
        ["feels guilty"],
    ),
    "PersonX prays at the altar": (
        ["to be blessed", "to ask for forgiveness"],
        ["to go to the church"],
        ["to feel at peace"],
        ["feels calm"],
    ),
    "PersonX sells PersonY a horse": (
        ["to make money"],
        ["to own a horse", "to find a buyer"],
        ["to count the coins"],
        ["gets paid", "has no horse"],
    ),
    "PersonX repairs the armor": (
        ["to be ready for battle"],
        ["to have a hammer", "to heat the forge"],
        ["to wear the armor"],
        ["gets tired", "feels proud"],
    ),
    "PersonX hunts a deer": (
        ["to feed the family"],
        ["to have a bow", "to track the deer"],
        ["to cook the meat"],
        ["gets food", "feels proud"],
    ),
    "PersonX guards the gate": (
        ["to keep the town safe"],
        ["to have a spear", "to stay awake"],
        ["to stop strangers"],
        ["gets bored", "stays alert"],
    ),
    "PersonX bakes bread": (
        ["to feed people", "to sell it"],
        ["to have flour", "to light the oven"],
        ["to eat the bread"],
        ["smells of bread", "gets flour on hands"],
    ),
    "PersonX insults PersonY": (
        ["to hurt PersonY's feelings"],
        ["to be angry at PersonY"],
        ["to leave"],
        ["starts an argument"],
    ),
    "PersonX rescues PersonY": (
        ["to save PersonY", "to be a hero"],
        ["to be brave", "to find PersonY"],
        ["to take PersonY home"],
        ["is thanked", "becomes a hero"],
    ),
    "PersonX hides the treasure": (
        ["to keep it safe", "to keep it for themselves"],
        ["to find a hiding place"],
        ["to remember where it is"],
        ["feels nervous"],
    ),
    "PersonX buys a potion": (
        ["to heal", "to try magic"],
        ["to have coins", "to find the alchemist"],
        ["to drink the potion"],
        ["has less money"],
    ),
    "PersonX trains with PersonY": (
        ["to get stronger"],
        ["to find a sparring partner"],
        ["to win the tournament"],
        ["gets bruised", "improves"],
    ),
    "PersonX sings a song": (["to entertain the crowd"], ["to know the words"], ["to be applauded"], ["feels joyful"]),
    "PersonX cleans the stable": (
        ["to keep the horses healthy"],
        ["to have a shovel"],
        ["to rest"],
        ["gets dirty", "smells of hay"],
    ),
    "PersonX writes a letter to PersonY": (
        ["to send news"],
        ["to have ink and paper"],
        ["to get a reply"],
        ["feels connected"],
    ),
    "PersonX challenges PersonY to a duel": (
        ["to prove their honour"],
        ["to have a weapon", "to be insulted"],
        ["to win the duel"],
        ["gets nervous", "draws a crowd"],
    ),
    "PersonX builds a fire": (
        ["to stay warm", "to cook food"],
        ["to gather wood"],
        ["to sit by the fire"],
        ["feels warm", "smells of smoke"],
    ),
    "PersonX crosses the bridge": (
        ["to reach the other side"],
        ["to pay the toll"],
        ["to continue the journey"],
        ["gets across"],
    ),
}


def seed_events() -> list[AtomicEvent]:
    """The seed as ATOMIC events; every fifth event is dev, every fifth after that tst."""
    out = []
    for i, (event, (intent, need, want, effect)) in enumerate(SEED.items()):
        relations = {r: ["none"] for r in RELATIONS}
        relations.update(xIntent=intent, xNeed=need, xWant=want, xEffect=effect)
        split = "dev" if i % 10 == 4 else "tst" if i % 10 == 9 else "trn"
        out.append(AtomicEvent(event, relations, [w.lower() for w in event.split()[1:3]], split))
    return out
