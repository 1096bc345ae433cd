"""Gated Channels block and the small three-stage CNN (Lindqvist and Mensah, 2025)."""
import torch
import torch.nn as nn


class GatedChannels(nn.Module):
    """Squeeze (global average pool), excitation (FC-ReLU-FC-sigmoid), channel-wise rescale."""

    def __init__(self, channels, reduction=16):
        super().__init__()
        hidden = channels // reduction
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)

    def forward(self, x):
        z = x.amax(dim=(2, 3))                      # squeeze: (N, C)
        s = self.fc2(torch.relu(self.fc1(z)))       # excitation: (N, C)
        return x * s[:, :, None, None]              # rescale


class SmallCNN(nn.Module):
    """Three conv stages (32, 64, 128 channels), a gate after each, GAP + linear classifier."""

    def __init__(self, in_channels=3, num_classes=10, widths=(32, 64, 128)):
        super().__init__()
        layers = []
        c_in = in_channels
        for c_out in widths:
            layers += [
                nn.Conv2d(c_in, c_out, kernel_size=3, padding=1),
                nn.BatchNorm2d(c_out),
                nn.ReLU(),
                GatedChannels(c_out),
                nn.MaxPool2d(2),
            ]
            c_in = c_out
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c_in, num_classes)

    def forward(self, x):
        h = self.features(x)
        return self.classifier(h.mean(dim=(2, 3)))
