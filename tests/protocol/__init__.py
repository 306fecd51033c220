"""What the bridge sends, checked against the official ACP SDK's schema."""
