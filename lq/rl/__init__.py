"""Switch A2C (paper 4.2, appendix 8.2): losses, returns, rollout storage, switches. Torch only."""
