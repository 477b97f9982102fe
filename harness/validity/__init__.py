"""The validity study: the decision engine and the per-variant intervals measured against a judge of known skill.

`judge` is the simulated judge (the labels it draws, the reply it sends); `truth` runs every draw of a case
through the project's pipeline once, which gives both the exact expected metrics and the outcome of any one
draw; `simulate` turns draws into decisions and interval checks; `sequential` is the early-stopping rule.
"""
