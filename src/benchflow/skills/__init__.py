"""Agent skills: deploying skill folders where each agent looks for them."""
