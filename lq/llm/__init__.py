"""Causal language models as agents on LIGHT-Quests (issue 111): what they read and how they rank the candidates the
environment offers. :mod:`lq.llm.scoring` ranks candidates by the model's likelihood given a prompt."""
