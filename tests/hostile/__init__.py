"""Hostile input for every stage: what a stranger's branch can put in front of rlmap."""
