"""How fast does it train against other tools: CleanRL, stock SB3's update, vector envs, the
language-model trainer."""
