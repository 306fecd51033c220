"""Commands about agents and profiles: profiles, agents install/list, doctor."""
