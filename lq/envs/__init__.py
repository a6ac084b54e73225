"""The RL environment of paper 4.1: the game engine, a frozen partner agent and a Dungeon Master, batched."""
