import numpy as np
import torch
from torch.autograd import Variable

x = Variable(torch.ones(2,2),requires_grad = False)
temp = Variable(torch.zeros(2,2),requires_grad = True)


y = x + temp + 2
y = y.mean()  #求平均数

y.backward()  #反向传递函数，用于求y对前面的变量（x）的梯度
print(temp.grad)  # d(y)/d(temp)
