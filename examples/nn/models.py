"""The networks Orion ships (orion.models: MLP, LoLA, LeNet-5 with x^2 activations; ResNet-20, -32 and -44 with
ReLU), written as plain PyTorch modules with the same layer shapes, a small CNN of four ReLUs (SmallCNN); and
scikit-learn's digits upsampled to 1 x 28 x 28 to train the first three on.

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


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm and ReLU, and the shortcut (a 1x1 convolution where the shape changes), as
    orion.models.resnet's BasicBlock."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out)) + self.shortcut(x)
        return F.relu(out)


class CifarResNet(nn.Module):
    """The CIFAR ResNets of He et al. for 3 x 32 x 32 images (orion.models.ResNet20, ResNet32, ResNet44): a 3x3
    convolution to 16 channels, three stages of n blocks (16, 32, 64 channels; stride 2 at the first block of the second
    and third), global average pooling, a linear layer: 6n + 2 layers with weights. The blocks are one Sequential
    (layers.0 .. layers.{3n-1}); Orion's are three stages of n (layers.{i}.{j})."""

    def __init__(self, n: int, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks, c_in = [], 16
        for i, c in enumerate((16, 32, 64)):
            for j in range(n):
                blocks.append(BasicBlock(c_in, c, 2 if (i > 0 and j == 0) else 1))
                c_in = c
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.linear = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        return self.linear(self.flatten(self.pool(x)))


class ResNet20(CifarResNet):
    """ResNet-20 (orion.models.ResNet20): three stages of three blocks."""

    def __init__(self, num_classes: int = 10):
        super().__init__(3, num_classes)


class ResNet32(CifarResNet):
    """ResNet-32 (orion.models.ResNet32): three stages of five blocks."""

    def __init__(self, num_classes: int = 10):
        super().__init__(5, num_classes)


class ResNet44(CifarResNet):
    """ResNet-44 (orion.models.ResNet44): three stages of seven blocks."""

    def __init__(self, num_classes: int = 10):
        super().__init__(7, num_classes)


class SmallCNN(nn.Module):
    """Four ReLUs on 3 x 32 x 32 images: three 3x3 convolutions (8, 16, 16 channels; stride 2 in the last two) with
    BatchNorm and ReLU, global average pooling, a linear layer to 16 with ReLU, and one to the classes. A network a new
    user tries first; kasoku.nn's goal for it is 4 GB and 15 s of key generation on two threads."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16)
        self.conv3, self.bn3 = nn.Conv2d(16, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16)
        self.pool, self.flatten = nn.AdaptiveAvgPool2d(1), nn.Flatten()
        self.fc1, self.fc2 = nn.Linear(16, 16), nn.Linear(16, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        return self.fc2(F.relu(self.fc1(self.flatten(self.pool(x)))))


def digits(test_size: int = 360, seed: int = 0, size: int = 28, channels: int = 1):
    """scikit-learn's 8 x 8 digits, bilinearly upsampled to channels x size x size in [0, 1] (1 x 28 x 28 by default;
    3 x 32 x 32, the channel repeated, for the CIFAR networks): (x_train, y_train), (x_test, y_test)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False).repeat(1, channels, 1, 1)
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
