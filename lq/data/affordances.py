"""Affordances for LIGHT DB objects, which carry none: inferred from the object's head noun.

The LIGHT environment DB lists objects by name, base form and description only, but the engine
needs to know what can be picked up, worn, wielded, eaten, drunk or filled. The head noun of the
name ("bottle" in "bottle of wine", "cloak" in "cloak of midnight blue") is looked up in
hand-written lexicons; "X of Y" phrases also pass food and drink through a vessel ("basket of
apples" is food, "mug of mead" a drink). :func:`evaluate` measures the rules against the
crowd-labelled affordances of LIGHT world graphs.

Sizes follow the LIGHT engine's rules and the sizes its crowd-built worlds use: an ordinary thing
is 1 and holds nothing; a container one can carry is 4 and holds 3 (every portable container in
the four large LIGHT worlds), so one never fits in another; a container fixed in place (a cupboard,
a table) is 20 and holds 20, LIGHT's default; anything else fixed in place is 20, too big for any
container or character (who carry 20).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lq.data.world_graph import WorldGraph

WEARABLE = set(
    """
hat cap hood helmet helm crown circlet tiara diadem cloak cape robe gown dress tunic shirt blouse coat overcoat
jacket vest waistcoat trousers breeches pants skirt kilt apron smock boot shoe sandal slipper glove gauntlet
mitten scarf shawl bandana veil mask belt sash ring necklace amulet pendant bracelet earring brooch locket
armor armour chainmail mail breastplate hauberk greaves bracer pauldron clothes clothing garment attire outfit
uniform rags robes gown suit costume jewellery jewelry backpack knapsack satchel spectacles glasses collar
corset stockings sock socks shawl fur headband headdress turban wig
""".split()
)
WIELDABLE = set(
    """
sword broadsword longsword shortsword rapier sabre saber cutlass scimitar dagger knife blade dirk axe hatchet
battleaxe mace club cudgel hammer maul flail morningstar spear lance pike halberd trident javelin harpoon bow
longbow crossbow sling staff stick cane rod wand scepter sceptre whip shield buckler torch pitchfork scythe
sickle hoe rake shovel spade pickaxe pick chisel tongs crowbar broom fork poker cleaver scalpel saw club
quarterstaff trowel oar paddle pistol musket cannon tool weapon
""".split()
)
FOOD = set(
    """
apple pear peach plum cherry grape berry berries fruit orange lemon fig date melon banana bread loaf roll bun
cake pie tart pastry biscuit cookie cracker cheese butter egg eggs meat beef pork mutton lamb venison ham
bacon sausage chicken fowl duck goose fish trout salmon herring eel stew soup porridge gruel broth carrot
turnip potato onion cabbage corn wheat grain oats barley rice bean beans pea peas nut nuts acorn mushroom
honey jam sugar salt candy sweet sweets meal feast ration rations provision provisions jerky vegetable
vegetables herb herbs seaweed mushroom mushrooms flour dough pudding turkey rabbit
""".split()
)
DRINK = set(
    """
water wine ale beer mead cider milk tea coffee juice potion elixir tonic brew grog rum whiskey whisky brandy
spirits liquor nectar broth soup
""".split()
)
CONTAINER = set(
    """
bag sack pouch purse satchel backpack knapsack basket box chest crate barrel cask keg trunk coffer casket
bucket pail pot cauldron kettle pan jar jug pitcher bottle flask vial canteen cup mug goblet tankard chalice
bowl plate dish tray platter urn vase cupboard cabinet wardrobe drawer shelf shelves bookshelf bookcase table
desk counter bench altar cart wagon wheelbarrow trough sheath scabbard quiver case bin hamper pot
""".split()
)
IMMOVABLE = set(
    """
tree trees statue throne fountain pond lake stream river well altar anvil forge furnace fireplace hearth oven
stove wall walls floor ceiling door gate window pillar column arch bridge stairs staircase house building
barn tower castle wagon cart boulder rock rocks mountain hill field garden orchard stall booth stage
platform counter cupboard wardrobe bookshelf bookcase shelf shelves bed table desk bench organ bell tapestry
painting mural carpet rug tent ship boat vine vines bush bushes hedge grass mud area ground road path
""".split()
)
AFFORDANCE_NAMES = ("gettable", "wearable", "wieldable", "food", "drink", "container")
THING_SIZE = 1
PORTABLE_CONTAINER_SIZE, PORTABLE_CONTAINER_HOLDS = 4, 3
FIXTURE_SIZE, FIXED_CONTAINER_HOLDS = 20, 20
_SPLIT = {"of", "with", "for", "from", "in", "on", "made", "filled", "full", "and", "that", "which", "to"}


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?()'\"") for w in text.lower().replace("-", " ").split() if w.strip(".,;:!?()'\"")]


def head_and_rest(name: str) -> tuple[str, list[str]]:
    """The head noun of a name (last word before the first "of"/"with"/...) and the words after it."""
    words = _words(name)
    for i, w in enumerate(words):
        if w in _SPLIT and i > 0:
            return words[i - 1], words[i + 1 :]
    return (words[-1] if words else ""), []


def _hit(word: str, lexicon: set[str]) -> bool:
    return word in lexicon or _singular(word) in lexicon


@dataclass(frozen=True)
class Affordances:
    gettable: bool
    wearable: bool
    wieldable: bool
    food: bool
    drink: bool
    container: bool
    size: int = THING_SIZE
    contain_size: int = 0  # what it holds when empty (LIGHT's contain_size before anything is put in)

    def as_dict(self) -> dict[str, bool]:
        return {a: getattr(self, a) for a in AFFORDANCE_NAMES}


def infer(name: str, base_forms: Iterable[str] = ()) -> Affordances:
    """Affordances of an object from its name and (for LIGHT DB objects) its base forms."""
    head, rest = head_and_rest(name)
    heads = {head} | {head_and_rest(b)[0] for b in base_forms if b.strip()}
    is_container = any(_hit(h, CONTAINER) for h in heads)
    content_food = is_container and any(_hit(w, FOOD) for w in rest)
    content_drink = is_container and any(_hit(w, DRINK) for w in rest)
    gettable = not any(_hit(h, IMMOVABLE) for h in heads)
    if gettable:
        size, holds = (PORTABLE_CONTAINER_SIZE, PORTABLE_CONTAINER_HOLDS) if is_container else (THING_SIZE, 0)
    else:
        size, holds = FIXTURE_SIZE, FIXED_CONTAINER_HOLDS if is_container else 0
    return Affordances(
        gettable=gettable,
        wearable=any(_hit(h, WEARABLE) for h in heads),
        wieldable=any(_hit(h, WIELDABLE) for h in heads),
        food=any(_hit(h, FOOD) for h in heads) or content_food,
        drink=any(_hit(h, DRINK) for h in heads) or content_drink,
        container=is_container,
        size=size,
        contain_size=holds,
    )


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


def evaluate(graphs: Iterable[WorldGraph]) -> dict[str, Score]:
    """Precision and recall of :func:`infer` against the affordances the world graphs carry."""
    scores = {a: Score() for a in AFFORDANCE_NAMES}
    for graph in graphs:
        for node in graph.objects:
            predicted = infer(node.name).as_dict()
            for a in AFFORDANCE_NAMES:
                truth, guess = getattr(node, a), predicted[a]
                s = scores[a]
                if truth and guess:
                    s.tp += 1
                elif guess:
                    s.fp += 1
                elif truth:
                    s.fn += 1
                else:
                    s.tn += 1
    return scores


def format_scores(scores: dict[str, Score]) -> str:
    lines = [f"{'affordance':<11}{'labelled':>9}{'precision':>11}{'recall':>8}", "-" * 39]
    for a, s in scores.items():
        lines.append(f"{a:<11}{s.tp + s.fn:>9}{s.precision:>11.2f}{s.recall:>8.2f}")
    return "\n".join(lines)
