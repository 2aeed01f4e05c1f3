"""The networks Orion ships (orion.models: MLP, LoLA, LeNet-5), written as plain PyTorch modules with the same layer
shapes, with x^2 activations; and scikit-learn's digits upsampled to 1 x 28 x 28 to train them on.

    from examples.nn.models import MLP, LoLA, LeNet5, digits, train
    (x_train, y_train), (x_test, y_test) = digits()
    net = train(MLP(), x_train, y_train)
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Square(nn.Module):
    def forward(self, x):
        return x * x


class MLP(nn.Module):
    """784-128-128-10 with BatchNorm and x^2 (Orion's MLP)."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1, self.bn1, self.act1 = nn.Linear(784, 128), nn.BatchNorm1d(128), Square()
        self.fc2, self.bn2, self.act2 = nn.Linear(128, 128), nn.BatchNorm1d(128), Square()
        self.fc3 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.flatten(x)
        x = self.act1(self.bn1(self.fc1(x)))
        x = self.act2(self.bn2(self.fc2(x)))
        return self.fc3(x)


class LoLA(nn.Module):
    """Conv 2x2 stride 2 (5 channels), 980-100-10, BatchNorm and x^2 (Orion's LoLA)."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1, self.bn1, self.act1 = (
            nn.Conv2d(1, 5, kernel_size=2, padding=0, stride=2),
            nn.BatchNorm2d(5),
            Square(),
        )
        self.flatten = nn.Flatten()
        self.fc1, self.bn2, self.act2 = nn.Linear(980, 100), nn.BatchNorm1d(100), Square()
        self.fc2 = nn.Linear(100, num_classes)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.flatten(x)
        x = self.act2(self.bn2(self.fc1(x)))
        return self.fc2(x)


class LeNet5(nn.Module):
    """Two 5x5 stride-2 convolutions (32, 64 channels), 3136-512-10, BatchNorm and x^2 (Orion's LeNet)."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1, self.bn1, self.act1 = nn.Conv2d(1, 32, 5, padding=2, stride=2), nn.BatchNorm2d(32), Square()
        self.conv2, self.bn2, self.act2 = nn.Conv2d(32, 64, 5, padding=2, stride=2), nn.BatchNorm2d(64), Square()
        self.flatten = nn.Flatten()
        self.fc1, self.bn3, self.act3 = nn.Linear(7 * 7 * 64, 512), nn.BatchNorm1d(512), Square()
        self.fc2 = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        x = self.flatten(x)
        x = self.act3(self.bn3(self.fc1(x)))
        return self.fc2(x)


def digits(test_size: int = 360, seed: int = 0):
    """scikit-learn's 8 x 8 digits, bilinearly upsampled to 1 x 28 x 28 in [0, 1]:
    (x_train, y_train), (x_test, y_test)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    x = F.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False)
    y = torch.tensor(d.target)
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(y), generator=g)
    test, train = order[:test_size], order[test_size:]
    return (x[train], y[train]), (x[test], y[test])


def train(
    net: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int = 30, lr: float = 1e-3, seed: int = 0
) -> nn.Module:
    """Adam on cross-entropy, mini-batches of 64, in the clear; returns the net in eval mode."""
    torch.manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    net.train()
    for _ in range(epochs):
        perm = torch.randperm(len(y))
        for i in range(0, len(y), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            loss = F.cross_entropy(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
    return net.eval()


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(x).argmax(1) == y).float().mean())
